public import HTTPClient
public import Simulator

extension FakeAppleRequest {
    /// The fake's request for what a client sent over the HTTP seam: path and query from the URL (percent-decoded),
    /// the bearer header, the body.
    public init(method: String, target: String, headers: [HTTPHeader], body: [UInt8]) {
        var rest = Substring(target)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for member in parts[1].split(separator: "&") {
                let pair = member.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[String(pair[0]).removingPercentEncoding ?? ""] =
                    pair.count == 2 ? (String(pair[1]).removingPercentEncoding ?? "") : ""
            }
        }
        self.init(
            method: method,
            path: String(parts[0]).removingPercentEncoding ?? String(parts[0]),
            query: query,
            authorization: headers.first { $0.name.lowercased() == "authorization" }?.value,
            body: body
        )
    }

    /// The fake's request for an `HTTPRequest` a client sent.
    public init(_ request: HTTPRequest) {
        self.init(method: request.method.rawValue, target: request.url, headers: request.headers, body: request.body)
    }
}
