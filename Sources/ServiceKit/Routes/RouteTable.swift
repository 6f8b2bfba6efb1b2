/// A listener's routes as one table of method, path and handler, from which its answers to the paths and methods it
/// does not serve follow: a path it serves with another method is a `405` whose `Allow` names the methods it takes,
/// any other path a `404`. The table is also the list of routes (the OpenAPI document is checked against it,
/// docs/contracts.md).
///
/// A path is matched on its bytes split at `/`: `/admin/status` is `admin`, `status`; a `{name}` segment of a pattern
/// (`/admin/subscriptions/{original_transaction_id}`) matches any one non-empty segment, handed to the handler. An
/// empty segment (`//`, a trailing `/`) matches no literal, so `/admin//status` is no route.
package struct RouteTable<Handler: Sendable>: Sendable {
    package struct Route: Sendable {
        package let method: String
        /// As written: `/admin/subscriptions/{original_transaction_id}`.
        package let pattern: String
        /// The pattern's segments; nil for a `{name}` one.
        package let segments: [String?]
        package let handler: Handler
    }

    package enum Match {
        /// The route's handler, with the values of its `{name}` segments in order.
        case found(Handler, parameters: [String])
        /// The path is served with other methods: these, for `Allow`.
        case methodNotAllowed(allow: String)
        case notFound
    }

    package let routes: [Route]

    package init(_ routes: [(method: String, pattern: String, handler: Handler)]) {
        self.routes = routes.map { route in
            Route(
                method: route.method,
                pattern: route.pattern,
                segments: Self.split(route.pattern).map { $0.hasPrefix("{") && $0.hasSuffix("}") ? nil : $0 },
                handler: route.handler
            )
        }
    }

    package func match(method: String, path: String) -> Match {
        let segments = Self.split(path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.parameters(of: segments, in: route.segments) else { continue }
            if route.method == method { return .found(route.handler, parameters: parameters) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allow: allowed.joined(separator: ", "))
    }

    /// Split on the bytes: split on characters, a `/` followed by a combining scalar (an emoji modifier, an accent)
    /// would be one character with it, no separator, and the route not found. The leading `/` starts no segment.
    package static func split(_ path: String) -> [String] {
        var bytes = path.utf8[...]
        if bytes.first == UInt8(ascii: "/") { bytes = bytes.dropFirst() }
        return bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    private static func parameters(of segments: [String], in pattern: [String?]) -> [String]? {
        guard segments.count == pattern.count else { return nil }
        var parameters: [String] = []
        for (segment, expected) in zip(segments, pattern) {
            if let expected {
                guard segment == expected else { return nil }
            } else {
                guard !segment.isEmpty else { return nil }
                parameters.append(segment)
            }
        }
        return parameters
    }
}
