internal import Threads

/// The production ``HTTPTransport``: libcurl easy handles, reused so connections and TLS sessions stay alive.
///
/// - Blocking `curl_easy_perform` runs on dispatch threads (a serial queue per easy handle, see ``CurlEasy``, through
///   the `Threads` module's `Blocking.run(on:_:)`), never on Swift's cooperative pool; at most
///   `maxConcurrentTransfers` run at once (later requests wait asynchronously for a slot), which also bounds the
///   number of easy handles and of threads blocked in curl.
/// - Only `http` and `https` are accepted (checked before curl sees the URL, and enforced by curl for redirects,
///   which are never followed: a 3xx comes back as a response). TLS peer and host verification are always on.
/// - A GET never sends a body (``HTTPRequest/body`` is ignored); DELETE sends one only when it is not empty. curl's
///   own `Expect: 100-continue` and form-encoded default `Content-Type` are not sent unless the caller sets them.
/// - A response body larger than ``HTTPRequest/maxResponseBytes`` aborts the transfer (`response_too_large`).
/// - Cancelling the calling task aborts the transfer within about a second (curl polls its progress callback about
///   once a second while idle) and fails with `transport_error`, reason "request cancelled".
/// - ``HTTPClientError/reason`` holds curl's message, the curl error number and the method and URL, never request
///   header values or body bytes.
///
/// Handles are cleaned up when the transport and its last running transfer are gone.
public final class CurlTransport: HTTPTransport {
    private let caBundlePath: String?
    private let gate: TransferGate
    private let pool = EasyHandlePool()

    /// - Parameters:
    ///   - caBundlePath: A PEM file of CA certificates to trust *instead of* the system store (private CAs, tests).
    ///   - maxConcurrentTransfers: How many transfers may run at once (each holds a thread while it runs); values
    ///     below 1 (a configured or command-line 0) mean 1.
    public init(caBundlePath: String? = nil, maxConcurrentTransfers: Int = 16) {
        self.caBundlePath = caBundlePath
        gate = TransferGate(limit: max(1, maxConcurrentTransfers))
    }

    public func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        try Self.validate(request)
        guard CurlGlobal.ready else { throw HTTPClientError(.transport, "curl_global_init failed") }

        await gate.acquire()
        defer { gate.release() }
        if Task.isCancelled { throw Self.cancelled(request) }

        guard let easy = pool.checkOut() else {
            throw HTTPClientError(.transport, "curl_easy_init failed" + Self.context(request))
        }
        let cancellation = CancellationFlag()
        let (pool, caBundlePath) = (self.pool, self.caBundlePath)
        let outcome = await withTaskCancellationHandler {
            await Blocking.run(on: easy.queue) {
                let outcome = easy.perform(request, caBundlePath: caBundlePath, cancellation: cancellation)
                pool.checkIn(easy)  // before the slot is released, so handles never outnumber slots
                return outcome
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try Self.judge(outcome, request).get()
    }

    // MARK: - Pure parts (unit-tested without a network)

    /// Rejects what must never reach curl: anything but an absolute http(s) URL, and header lines that could smuggle
    /// extra headers (CR, LF or NUL) or would be misread (a bad name).
    static func validate(_ request: HTTPRequest) throws(HTTPClientError) {
        let url = request.url
        let lower = url.prefix(8).lowercased()
        let schemeLength = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        guard schemeLength > 0 else {
            throw HTTPClientError(.invalidURL, "only absolute http:// or https:// URLs are allowed: \(printable(url))")
        }
        guard let first = url.utf8.dropFirst(schemeLength).first, first != UInt8(ascii: "/") else {
            throw HTTPClientError(.invalidURL, "URL has no host: \(printable(url))")
        }
        guard !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw HTTPClientError(.invalidURL, "URL contains a space or control character: \(printable(url))")
        }
        for (index, header) in request.headers.enumerated() {
            let nameOK =
                !header.name.isEmpty
                && header.name.utf8.allSatisfy { b in
                    b > 0x20 && b < 0x7F && b != UInt8(ascii: ":") && b != UInt8(ascii: ";")
                }
            // The name is not secret; the value may be, so it is never quoted.
            guard nameOK else {
                throw HTTPClientError(
                    .transport,
                    "request header #\(index) has an invalid name: \(printable(header.name))"
                )
            }
            guard !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw HTTPClientError(.transport, "request header \(header.name) has a CR, LF or NUL in its value")
            }
        }
    }

    /// Turns what curl reported into a response or an error.
    static func judge(_ outcome: CurlOutcome, _ request: HTTPRequest) -> Result<HTTPResponse, HTTPClientError> {
        if outcome.curlCode == 0 {
            guard outcome.status >= 100 else {
                return .failure(HTTPClientError(.protocolError, "no HTTP status line" + context(request)))
            }
            return .success(HTTPResponse(status: outcome.status, headers: outcome.headers, body: outcome.body))
        }
        if outcome.cancelled { return .failure(cancelled(request)) }
        if outcome.exceededLimit {
            return .failure(
                HTTPClientError(
                    .responseTooLarge,
                    "response body exceeds \(request.maxResponseBytes) bytes (curl error \(outcome.curlCode))"
                        + context(request)
                )
            )
        }
        let reason = "\(outcome.message) (curl error \(outcome.curlCode))" + context(request)
        return .failure(HTTPClientError(code(forCurlError: outcome.curlCode), reason))
    }

    /// `CURLcode` → ``HTTPClientError/Code``.
    static func code(forCurlError curlCode: UInt32) -> HTTPClientError.Code {
        switch curlCode {
        case 28: .timeout  // OPERATION_TIMEDOUT (connect or whole-request deadline)
        case 5, 6, 7: .connectionFailed  // COULDNT_RESOLVE_PROXY, COULDNT_RESOLVE_HOST, COULDNT_CONNECT
        // TLS handshake, certificate verification, CA/CRL files, engines, pinning
        case 35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91: .tlsFailure
        case 63: .responseTooLarge  // FILESIZE_EXCEEDED: Content-Length above MAXFILESIZE
        case 3: .invalidURL  // URL_MALFORMAT (passed our scheme check, failed curl's parser)
        // UNSUPPORTED_PROTOCOL: our scheme check has already run, so curl reports this only for what the server
        // sent: a reply without an HTTP status line is HTTP/0.9 to curl, which it refuses with this code.
        case 1: .protocolError
        // WEIRD_SERVER_REPLY, HTTP2, PARTIAL_FILE, GOT_NOTHING, SEND_ERROR, RECV_ERROR, BAD_CONTENT_ENCODING,
        // HTTP2_STREAM
        case 8, 16, 18, 52, 55, 56, 61, 92: .protocolError
        default: .transport  // includes 23 WRITE_ERROR when not our size abort, 42 when not our cancellation
        }
    }

    private static func cancelled(_ request: HTTPRequest) -> HTTPClientError {
        HTTPClientError(.transport, "request cancelled" + context(request))
    }

    /// `"; POST https://…"` — the URL never carries secrets here; headers and bodies are never included.
    static func context(_ request: HTTPRequest) -> String {
        "; \(request.method.rawValue) \(printable(request.url))"
    }

    /// The string with control characters escaped, capped in length (a reason is one log line).
    static func printable(_ s: String) -> String {
        let capped = s.count > 512 ? String(s.prefix(512)) + "…" : s
        return String(capped.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }
}
