public import HTTPClient
import Synchronization

/// The test ``HTTPTransport``: answers from a script and records every request it was given, in arrival order.
///
/// ```swift
/// let apple = ScriptedTransport { request throws(HTTPClientError) in
///     HTTPResponse(status: 200, body: Array(#"{"status":0}"#.utf8))
/// }
/// let timingOut = ScriptedTransport(results: [.failure(HTTPClientError(.timeout, "scripted"))])
/// ```
public final class ScriptedTransport: HTTPTransport {
    public typealias Responder = @Sendable (HTTPRequest) async throws(HTTPClientError) -> HTTPResponse

    private let responder: Responder
    private let recorded = Mutex<[HTTPRequest]>([])

    /// Answers every request with `responder`.
    public init(_ responder: @escaping Responder) {
        self.responder = responder
    }

    /// Answers the requests in order with `results`; once they run out, every further request fails with
    /// `transport_error` (so a test notices an unexpected extra call).
    public convenience init(results: [Result<HTTPResponse, HTTPClientError>]) {
        let queue = Mutex(results[...])
        self.init { request throws(HTTPClientError) in
            guard let next = queue.withLock({ $0.popFirst() }) else {
                let what = "\(request.method.rawValue) \(request.url)"
                throw HTTPClientError(.transport, "ScriptedTransport: no scripted result left for \(what)")
            }
            return try next.get()
        }
    }

    /// Every request sent so far, in the order `send` was called.
    public var requests: [HTTPRequest] { recorded.withLock { $0 } }

    public func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        ContractSamples.recordSent(headers: request.headers.map { ($0.name, $0.value) }, body: request.body)
        return try await responder(request)
    }
}
