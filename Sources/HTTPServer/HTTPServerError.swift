/// Why ``HTTPServer/start()`` did not start. Equality uses the code only; `reason` is one log line (no request data).
public struct HTTPServerError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A ``HTTPServer/Configuration`` value is out of range (host not an IPv4 literal, zero threads, …).
        public static let invalidConfiguration = Self(rawValue: "invalid_configuration")
        /// Another socket is already listening on the host and port.
        public static let addressInUse = Self(rawValue: "address_in_use")
        /// The TLS certificate or private key PEM was refused (not PEM, not matching, unsupported).
        public static let badTLSMaterial = Self(rawValue: "bad_tls_material")
        /// `start()` was called while the server runs.
        public static let alreadyStarted = Self(rawValue: "already_started")
        /// libmicrohttpd did not start for another reason (see `reason`: its own messages and errno).
        public static let startFailed = Self(rawValue: "start_failed")
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) { (self.code, self.reason) = (code, reason) }
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "HTTPServerError.\(code): \(reason)" }
}
