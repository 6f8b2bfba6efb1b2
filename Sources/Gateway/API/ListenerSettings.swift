internal import HTTPServer
internal import ReceiptPath
public import ServiceKit

/// One HTTP listener's settings from the config — the public one (`listen`, `limits`, `listen_tls`) or the admin one
/// (`admin.listen`) — and starting it. Every failure is a ``ConfigError`` naming the field at fault.
public struct ListenerSettings: Sendable {
    /// The config field of the address, named in errors.
    let field: String
    let address: String
    var configuration: HTTPServer.Configuration

    /// The Apple-facing listener: `listen`, the `limits` bounding threads, connections and requests, and HTTPS when
    /// `listen_tls` is set (its files read now).
    static func main(_ config: GatewayConfig) throws(ConfigError) -> ListenerSettings {
        var main = HTTPServer.Configuration()
        (main.host, main.port) = try address(config.listen, field: "listen")
        main.threads = config.limits.httpThreads
        (main.connectionLimit, main.connectionsPerAddressLimit) = (
            UInt32(config.limits.connections), UInt32(config.limits.connectionsPerAddress)
        )
        (main.requestDeadlineSeconds, main.bodyBufferBudgetBytes) = (
            UInt32(config.limits.requestDeadlineSeconds), config.limits.bodyBufferBytes
        )
        main.bodyBufferPerAddressBytes = config.limits.effectiveBodyBufferPerAddressBytes
        // The receipt path's own answer to a receipt past the body limit (docs/operations.md, "Moving the receipt path").
        main.tooLargeAnswers = ReceiptEndpoint.tooLargeAnswers
        main.tls = try TLSFiles(config)?.load()
        return ListenerSettings(field: "listen", address: config.listen, configuration: main)
    }

    /// The admin listener's connection budget, fixed (docs/operations.md, "The admin listener"). Its clients — an
    /// operator's `curl`, the Prometheus scraper — connect from a few addresses, often 127.0.0.1 itself, and send their
    /// request as soon as they connect; a local process opening connections and never finishing a request on them
    /// must not lock them out.
    enum AdminBudget {
        /// Connections open at once, in all and from one address (the scraper and the operators share 127.0.0.1).
        static let connections: UInt32 = 32
        /// A connection without a complete request head after this long (from its accept, or from its previous
        /// request's end) is closed.
        static let headerDeadlineSeconds: UInt32 = 5
        /// A request, body included, must arrive within this long of its first byte.
        static let requestDeadlineSeconds: UInt32 = 10
        /// A connection silent this long is closed.
        static let idleTimeoutSeconds: UInt32 = 10
    }

    /// The admin listener: `admin.listen`, two threads, never TLS, the admin API's security headers on every answer,
    /// and a small connection budget of its own
    /// (``AdminBudget``): when it is full, a new connection closes the one that has waited longest without delivering
    /// its request, so connections that never finish a request cannot keep an operator or the scraper out.
    static func admin(_ config: GatewayConfig) throws(ConfigError) -> ListenerSettings {
        var admin = HTTPServer.Configuration()
        (admin.host, admin.port) = try address(config.adminListen, field: "admin.listen")
        admin.threads = 2
        (admin.connectionLimit, admin.connectionsPerAddressLimit) = (AdminBudget.connections, AdminBudget.connections)
        admin.evictsWaitingConnections = true
        admin.headerDeadlineSeconds = AdminBudget.headerDeadlineSeconds
        admin.requestDeadlineSeconds = AdminBudget.requestDeadlineSeconds
        admin.connectionTimeoutSeconds = AdminBudget.idleTimeoutSeconds
        // Its clients share one address (127.0.0.1, most often), and 32 connections cannot fill its body budget.
        admin.bodyBufferPerAddressBytes = 0
        // The answers the server gives itself (a 413, a 503) carry the admin API's security headers too.
        admin.defaultHeaders = AdminAPI.securityHeaders
        return ListenerSettings(field: "admin.listen", address: config.adminListen, configuration: admin)
    }

    /// A listener with these settings answering with `handler`, bound: a port that cannot be listened on is a
    /// ``ConfigError`` naming the setting.
    func listen(_ handler: @escaping RequestHandler) throws(ConfigError) -> Listener {
        try Listener(HTTPServer(configuration: configuration, handler: handler)) { error in
            ConfigError(field: field, "cannot listen on \(address): \(error)")
        }
    }

    /// `HOST:PORT` (`listen`, `admin.listen`, a command's `--listen`) as host and port; `field` names it in the error.
    public static func address(_ text: String, field: String) throws(ConfigError) -> (String, UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw ConfigError(field: field, "must be HOST:PORT, e.g. 127.0.0.1:8080")
        }
        return (String(text[..<colon]), port)
    }
}
