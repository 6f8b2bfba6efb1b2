/// One outbound HTTP request. Bodies are bytes; header names are sent as given.
public struct HTTPRequest: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case delete = "DELETE"
        /// With a body, like PUT (the App Store Connect API's updates).
        case patch = "PATCH"
    }

    public var method: Method
    public var url: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Whole-request deadline (connect + send + receive), milliseconds.
    public var timeoutMillis: Int
    /// Connect deadline, milliseconds.
    public var connectTimeoutMillis: Int
    /// Largest response body accepted; a larger one fails with `response_too_large`.
    public var maxResponseBytes: Int

    public init(
        method: Method,
        url: String,
        headers: [HTTPHeader] = [],
        body: [UInt8] = [],
        timeoutMillis: Int = 30_000,
        connectTimeoutMillis: Int = 5_000,
        maxResponseBytes: Int = 8 * 1024 * 1024
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMillis = timeoutMillis
        self.connectTimeoutMillis = connectTimeoutMillis
        self.maxResponseBytes = maxResponseBytes
    }
}

public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) { (self.name, self.value) = (name, value) }
}

/// A response that arrived completely (any status code).
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }

    /// First header with `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// Why no complete response arrived. Equality uses the code only; `reason` never holds request bodies or headers
/// (they may carry secrets).
public struct HTTPClientError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The URL is not an absolute http(s) URL.
        public static let invalidURL = Self(rawValue: "invalid_url")
        /// The deadline passed (connect or whole request).
        public static let timeout = Self(rawValue: "timeout")
        /// No connection: refused, unreachable, DNS failure.
        public static let connectionFailed = Self(rawValue: "connection_failed")
        /// TLS handshake or certificate verification failed.
        public static let tlsFailure = Self(rawValue: "tls_failure")
        /// The peer closed the connection or sent something that is not HTTP.
        public static let protocolError = Self(rawValue: "protocol_error")
        /// The response body exceeded `maxResponseBytes`.
        public static let responseTooLarge = Self(rawValue: "response_too_large")
        /// Anything else the transport reported.
        public static let transport = Self(rawValue: "transport_error")
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) { (self.code, self.reason) = (code, reason) }
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "HTTPClientError.\(code): \(reason)" }
}

/// The seam every outbound call goes through: libcurl in production, a scripted fake in tests.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse
}
