import Testing

@testable import ServiceKit

/// A listener's table answers what it serves, a 405 naming the methods of a path it serves otherwise, a 404 else.
@Suite struct RouteTableTests {
    static let table = RouteTable<String>([
        ("GET", "/admin/status", "status"),
        ("POST", "/admin/replay", "replay"),
        ("GET", "/admin/subscriptions/{id}", "subscription"),
        ("DELETE", "/admin/subscriptions/{id}", "forget"),
        ("POST", "/notifications", "notification"),
    ])

    static func describe(_ match: RouteTable<String>.Match) -> String {
        switch match {
        case .found(let handler, let parameters): ([handler] + parameters).joined(separator: " ")
        case .methodNotAllowed(let allow): "405 " + allow
        case .notFound: "404"
        }
    }

    @Test(
        arguments: [
            ("GET", "/admin/status", "status"),
            ("POST", "/admin/status", "405 GET"),
            ("GET", "/admin/subscriptions/2000000123", "subscription 2000000123"),
            ("PUT", "/admin/subscriptions/2000000123", "405 GET, DELETE"),
            ("GET", "/admin/subscriptions/", "404"),
            ("GET", "/admin/subscriptions", "404"),
            ("GET", "/admin/subscriptions/a/b", "404"),
            ("GET", "/admin//status", "404"),
            ("GET", "/admin/status/", "404"),
            ("GET", "admin/status", "status"),
            ("GET", "/admin/stat\u{301}us", "404"),
            ("POST", "/notifications", "notification"),
            ("GET", "/notifications", "405 POST"),
            ("GET", "/", "404"),
            ("GET", "", "404"),
            // A combining scalar right after a `/` is its own segment, not glued to the separator.
            ("GET", "/admin/subscriptions/\u{301}x", "subscription \u{301}x"),
        ] as [(String, String, String)]
    )
    func matches(_ method: String, _ path: String, _ expected: String) {
        #expect(Self.describe(Self.table.match(method: method, path: path)) == expected)
    }
}
