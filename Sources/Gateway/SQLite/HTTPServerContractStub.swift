// TEMPORARY compile stub of the HTTP server contract (the real one lands from branch `http-server`). DELETE BEFORE MERGE.
public struct ServerRequest: Sendable {
    public var method: String
    public var path: String
    public var query: [String: String]
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var remoteAddress: String
    public func header(_ name: String) -> String? { fatalError() }
}
public struct ServerResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }
    public static func json(_ status: Int, _ body: [UInt8]) -> ServerResponse { fatalError() }
}
public typealias RequestHandler = @Sendable (ServerRequest) -> ServerResponse
public struct HTTPServerError: Error, Hashable, CustomStringConvertible { public var description: String { "" } }
public final class HTTPServer {
    public struct TLS: Sendable { public var certificatePEM: String; public var privateKeyPEM: String
        public init(certificatePEM: String, privateKeyPEM: String) { (self.certificatePEM, self.privateKeyPEM) = (certificatePEM, privateKeyPEM) } }
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        public var port: UInt16 = 0
        public var threads: Int = 16
        public var maxBodyBytes: Int = 1_048_576
        public var connectionTimeoutSeconds: UInt32 = 30
        public var connectionLimit: UInt32 = 1024
        public var tls: TLS? = nil
        public init() {}
    }
    public init(configuration: Configuration, handler: @escaping RequestHandler) { fatalError() }
    public func start() throws(HTTPServerError) { fatalError() }
    public var port: UInt16 { fatalError() }
    public func stopAccepting() { fatalError() }
    public func stop() { fatalError() }
}
