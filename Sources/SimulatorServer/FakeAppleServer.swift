internal import Gateway
public import HTTPClient
public import HTTPServer
public import ServiceKit
public import Simulator

#if canImport(Glibc)
import Glibc
#endif

/// The fake Apple behind an ``HTTPServer`` handler: request in, ``FakeApple`` answer out, one log line per request.
/// Test notifications go to the app's sandbox URL in the fake App Store Connect (by default `notifyURL`).
public final class FakeAppleServer: Sendable {
    let fake: FakeApple

    /// The fake App Store Connect behind it, for in-process tests (the same state the control endpoints change).
    public var appStoreConnect: FakeAppStoreConnect { fake.appStoreConnect }

    /// A subscription's app receipt as its device holds it now (the same as `GET /fake/receipt`).
    public func receipt(originalTransactionID: String) throws -> String {
        try fake.receipt(originalTransactionID: originalTransactionID)
    }

    /// `now` is the fake's clock (tests pass the story's clock so bearer tokens and answers share one time).
    public init(
        pki folder: String,
        notifyURL: String?,
        transport: any HTTPTransport,
        now: @escaping @Sendable () -> Int64 = WallClock.wallMillis
    ) throws {
        self.fake = Self.make(
            try SimulatorPKI.load(folder: folder),
            notifyURL: notifyURL,
            transport: transport,
            now: now
        )
    }

    /// `simulate serve-apple`'s fake, on the wall clock: the PKI folder loaded and, when `rateLimit` or
    /// `appleRateLimits` is given, written to its state first (`.some(nil)` clears it, nil keeps the state's).
    public convenience init(
        pki folder: String,
        rateLimit: SimWorld.APIRateLimit??,
        notifyURL: String?,
        transport: any HTTPTransport,
        appleRateLimits: AppleRateLimits?? = nil
    ) throws {
        let pki = try SimulatorPKI.load(folder: folder)
        if let rateLimit { try SimStateStore(folder: pki.folder).update { $0.apiRateLimit = rateLimit } }
        if let appleRateLimits {
            try SimStateStore(folder: pki.folder).update { $0.appleRateLimits = appleRateLimits }
        }
        self.init(pki: pki, notifyURL: notifyURL, transport: transport)
    }

    init(pki: SimulatorPKI, notifyURL: String?, transport: any HTTPTransport) {
        self.fake = Self.make(pki, notifyURL: notifyURL, transport: transport, now: WallClock.wallMillis)
    }

    /// An ``HTTPServer`` on `host:port` (port 0: a free one), started, answering with this fake until it is stopped.
    public func serve(host: String, port: UInt16) throws(HTTPServerError) -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        (configuration.host, configuration.port) = (host, port)
        let server = HTTPServer(configuration: configuration, handler: handle)
        try server.start()
        return server
    }

    private static func make(
        _ pki: SimulatorPKI,
        notifyURL: String?,
        transport: any HTTPTransport,
        now: @escaping @Sendable () -> Int64
    )
        -> FakeApple
    {
        let store = SimStateStore(folder: pki.folder)
        return FakeApple(pki: pki, now: now, notifyURL: notifyURL) { @Sendable token, payload, url in
            guard let url else { return }  // no URL set: Apple has nowhere to send it
            Task {
                let status = await Simulation.send(
                    InboundBody.v2(signedPayload: payload),
                    to: url,
                    transport: transport
                )
                let result =
                    (200..<300).contains(status)
                    ? "SUCCESS" : status == 0 ? "NO_RESPONSE" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                try? store.recordTestAttempt(token: token, result: result, at: WallClock.wallMillis())
            }
        }
    }

    /// Every query member reaches the fake, repeated ones included (Apple's clients send `status=1&status=3`), and
    /// the fake's headers (`Retry-After`) reach the client.
    public func handle(_ request: ServerRequest) -> ServerResponse {
        let r = fake.handle(
            FakeAppleRequest(
                method: request.method,
                path: request.path,
                queryItems: request.queryItems.map { FakeAppleRequest.QueryItem($0.name, $0.value) },
                authorization: request.header("authorization"),
                body: request.body
            )
        )
        if r.delayMillis > 0 { usleep(useconds_t(min(r.delayMillis, 600_000)) * 1_000) }
        var response = r.body.isEmpty ? ServerResponse(status: r.status) : .json(r.status, r.body)
        response.headers += r.headers
        return response
    }
}
