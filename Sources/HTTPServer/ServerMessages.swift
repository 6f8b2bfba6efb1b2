/// One HTTP request as ``HTTPServer`` hands it to its ``RequestHandler``: complete, body included.
public struct ServerRequest: Sendable {
    /// As sent ("POST", "GET", "HEAD", …). Any method reaches the handler; routing is the handler's job.
    public var method: String
    /// The path, percent-decoded by libmicrohttpd, without the query ("/notifications").
    public var path: String
    /// The decoded query arguments (`+` and `%XX` decoded); a key without `=` maps to "". When a key repeats, the
    /// first occurrence wins.
    public var query: [String: String]
    /// Every query argument in the order sent, repeated keys included (`status=1&status=3`), decoded like ``query``.
    public var queryItems: [(name: String, value: String)]
    /// Header fields in arrival order, names as sent. Bytes that are not UTF-8 become U+FFFD.
    public var headers: [(name: String, value: String)]
    /// The body, byte-exact (at most ``HTTPServer/Configuration/maxBodyBytes``).
    public var body: [UInt8]
    /// The peer's numeric address ("127.0.0.1", or an IPv6 literal); "" if unknown.
    public var remoteAddress: String
    /// The peer's TCP port; 0 if unknown. Requests on one keep-alive connection share it.
    public var remotePort: UInt16

    public init(
        method: String,
        path: String,
        query: [String: String] = [:],
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        remoteAddress: String = "",
        remotePort: UInt16 = 0,
        queryItems: [(name: String, value: String)]? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.queryItems = queryItems ?? query.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
    }

    /// The first header named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        firstValue(in: headers, named: name)
    }
}

/// What a ``RequestHandler`` answers. `Content-Length` is always computed from `body` (a handler's own
/// `Content-Length` header is ignored). A status outside 200...999, or a header name or value libmicrohttpd
/// refuses (control characters, CR, LF, NUL), is a handler bug: the client gets a 500 instead, and the server's
/// error log records why.
public struct ServerResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Set by ``later(_:)``: the response is what this work returns.
    var deferred: (@Sendable () async -> ServerResponse)?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
        deferred = nil
    }

    /// A response that `produce` makes once the handler has returned: the handler thread goes back to the pool at
    /// once, and the connection stays suspended (holding no thread) until `produce` returns — for a handler that
    /// would otherwise wait on something slow, such as another server. `produce` runs as a task on Swift's
    /// cooperative pool, so it must await rather than block; its own result must not be `later` again (that is a
    /// handler bug: answered 500). The server's stop waits for it like for a running handler.
    public static func later(_ produce: @escaping @Sendable () async -> ServerResponse) -> ServerResponse {
        var response = ServerResponse(status: 500)
        response.deferred = produce
        return response
    }

    /// `status` with `Content-Type: application/json` and `body` as given (already encoded JSON).
    public static func json(_ status: Int, _ body: [UInt8]) -> ServerResponse {
        ServerResponse(status: status, headers: [(name: "Content-Type", value: "application/json")], body: body)
    }

    /// The first header named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        firstValue(in: headers, named: name)
    }

    /// `{"error":{"code":…,"message":…}}` — the shape of every error the server itself answers. Both strings are
    /// fixed ASCII text chosen by the server (never input), so they need no escaping beyond the quotes.
    static func serverError(_ status: Int, code: String, message: String) -> ServerResponse {
        json(status, Array(#"{"error":{"code":"\#(code)","message":"\#(message)"}}"#.utf8))
    }
}

/// Answers one request. It runs synchronously on one of the server's threads and may block (it journals to disk
/// before answering); while it does, the other connections served by that thread wait (see
/// ``HTTPServer/Configuration/threads``).
public typealias RequestHandler = @Sendable (ServerRequest) -> ServerResponse

private func firstValue(in headers: [(name: String, value: String)], named name: String) -> String? {
    let wanted = name.lowercased()
    return headers.first { $0.name.lowercased() == wanted }?.value
}
