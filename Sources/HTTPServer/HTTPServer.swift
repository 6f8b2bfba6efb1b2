internal import CMicroHTTPD
import Glibc
internal import Threads

/// The inbound HTTP(S) server: libmicrohttpd with an internal poll(2) thread pool, wrapped so that no C type shows.
///
/// - Every request, whatever its method and path, reaches `handler` once, complete: headers, decoded query and the
///   whole body. Routing is the handler's job.
/// - Threads: the handler runs on a pool of ``Configuration/threads`` threads of its own, with its connection
///   suspended meanwhile, so a handler that blocks holds exactly one of them. libmicrohttpd's I/O (accepting,
///   parsing, reading bodies, sending, timeouts) runs on a separate poll pool of min(`threads`, CPU cores) threads
///   that never wait for a handler. A handler that would wait on something slow answers
///   ``ServerResponse/later(_:)`` instead: its thread is free at once, and the connection waits, suspended, for the
///   work's response.
/// - Bodies: a body larger than ``Configuration/maxBodyBytes`` (by its `Content-Length`, or a chunked body that grows
///   past it) is answered 413 (`{"error":{"code":"body_too_large",…}}`) and never reaches the handler. A body of
///   exactly the limit is accepted. The answer comes once the client has sent its body, which is read and dropped
///   meanwhile: most clients write the whole body before reading, and closing under them would reset the connection
///   before they read the 413. `Expect: 100-continue` requests are answered at once (their clients wait), and so are
///   bodies declared larger than ``Configuration/drainLimitBytes``; a chunked body that passes that limit too is cut
///   off without an answer. Every refusal closes its connection (`Connection: close`).
/// - Memory: bodies are buffered as their bytes arrive (never ahead of them, whatever the `Content-Length` says),
///   within a budget shared by all requests, ``Configuration/bodyBufferBudgetBytes``, of which the requests of one
///   client address may hold at most ``Configuration/bodyBufferPerAddressBytes``. A request whose body would pass the
///   budget is answered 503 (`{"error":{"code":"server_busy",…}}`, `Retry-After`) the same way a 413 is, and one whose
///   body would pass its address's share 503 `address_busy`; its bytes are held until its response has gone out.
///   ``bufferedBodyBytes`` is the amount held now.
/// - Connections: at most ``Configuration/connectionLimit`` at once, and ``Configuration/connectionsPerAddressLimit``
///   from one client address; more are closed as soon as they are accepted — or, with
///   ``Configuration/evictsWaitingConnections``, each new one closes the connection that has waited longest without
///   delivering a request, so that connections which never finish a request cannot keep a client out. A request must
///   arrive whole (request line, headers and body) within ``Configuration/requestDeadlineSeconds`` of its first byte,
///   and, when ``Configuration/headerDeadlineSeconds`` is set, a connection must deliver a complete request head within
///   that long of its accept (or of its previous request's end), or it is closed (see `ConnectionTracker`); idle
///   connections close after ``Configuration/connectionTimeoutSeconds`` without a byte. Together these bound what slow
///   clients can hold: a slot, a deadline's worth of time, and budgeted memory.
/// - libmicrohttpd answers malformed HTTP itself (400), headers larger than
///   ``Configuration/headerMemoryLimitBytes`` with 431, and handles keep-alive, pipelining, chunked bodies and
///   `Expect: 100-continue`. A chunked body it refuses while decoding it (a chunk-size line longer than its buffer, as
///   with a huge chunk extension; a malformed one; a chunk size past 2^64) is answered by the server instead, 400
///   `bad_request` or 413 `body_too_large` in the JSON shape, on its connection closed after it (over TLS: closed
///   without an answer); only when several chunked bodies arrive at once on the same I/O thread does libmicrohttpd's
///   own page go out (see `ChunkedBodyRefusal`).
/// - Its error messages go to ``Configuration/errorLog`` (or are only counted), never to stderr.
/// - SIGPIPE: libmicrohttpd blocks SIGPIPE on every thread it starts and sends with `MSG_NOSIGNAL`
///   (``suppressesSIGPIPE``), so a client that disconnects mid-response cannot kill the process; the service needs
///   no signal setup of its own for this server.
/// - Graceful shutdown: ``stopAccepting()``, then ``stop()``.
///
/// Not Sendable: one owner starts and stops it. The handler and the limits live in a separate Sendable context that
/// libmicrohttpd's threads use.
public final class HTTPServer {
    /// PEM text for HTTPS. Kept in memory (copied to C strings) for as long as the server runs.
    public struct TLS: Sendable {
        public var certificatePEM: String
        public var privateKeyPEM: String
        public init(certificatePEM: String, privateKeyPEM: String) {
            (self.certificatePEM, self.privateKeyPEM) = (certificatePEM, privateKeyPEM)
        }
    }

    public struct Configuration: Sendable {
        public typealias TLS = HTTPServer.TLS

        /// An IPv4 literal; "0.0.0.0" listens on every interface.
        public var host: String = "127.0.0.1"
        /// 0 lets the kernel choose; read the bound port back from ``HTTPServer/port``.
        public var port: UInt16 = 0
        /// How many handlers may run at once (the handler pool). A handler that blocks holds one of these threads;
        /// complete requests beyond that wait for a free one, while I/O goes on (see ``HTTPServer``).
        public var threads: Int = 16
        /// The largest request body accepted (see ``HTTPServer``).
        public var maxBodyBytes: Int = 1_048_576
        /// Request-body bytes held in memory at once, across all requests (at least ``maxBodyBytes``). A request
        /// whose body would pass it is answered 503 `server_busy` with `Retry-After`. The default holds 64 bodies of
        /// the largest size; what one client address can take of it is bounded by ``bodyBufferPerAddressBytes``.
        public var bodyBufferBudgetBytes: Int = 64 << 20
        /// Request-body bytes held in memory at once for the requests of one client address: its share of
        /// ``bodyBufferBudgetBytes`` (0: no share, any address may take the whole budget; otherwise at least
        /// ``maxBodyBytes``). A request whose body would pass it is answered 503 `address_busy` with `Retry-After`,
        /// whatever room the budget has, so that one address holding bodies open on many connections cannot leave
        /// the others without room. The default, an eighth of the default budget, holds 8 bodies of the largest size,
        /// or some 400 of Apple's notifications (about 20 KB each: more than the 128 connections one address may
        /// open); seven addresses holding theirs still leave the others 8 MiB. Behind a reverse proxy every request
        /// comes from the proxy's address: raise this to ``bodyBufferBudgetBytes`` (or set 0) there, and limit clients
        /// at the proxy (docs/reverse-proxy.md).
        public var bodyBufferPerAddressBytes: Int = 8 << 20
        /// How much of a refused body (413, or 503 for the budget) is read and dropped so that the client, still
        /// writing it, gets to read the answer. A `Content-Length` above this is answered at once instead (the client
        /// may then see a reset rather than the answer); a chunked body that passes it is cut off without an answer.
        public var drainLimitBytes: Int = 4 << 20
        /// A connection silent for this long is closed (0: never). An inactivity timeout: each byte resets it.
        public var connectionTimeoutSeconds: UInt32 = 30
        /// The longest a request may take to arrive, from its first byte (a TLS handshake included) to the end of its
        /// body (0: no deadline). Unlike ``connectionTimeoutSeconds`` it does not restart with each byte, so a client
        /// that trickles cannot hold a connection longer than this. It applies to each request of a keep-alive
        /// connection; an idle connection between requests is left to ``connectionTimeoutSeconds``. A handler's run
        /// and the sending of the response do not count.
        public var requestDeadlineSeconds: UInt32 = 30
        /// The longest a connection may wait for the complete head (request line and headers) of a request, counted
        /// from its accept, or from the end of its previous request on a keep-alive connection (0: no header
        /// deadline). Unlike ``requestDeadlineSeconds`` it needs no byte to start, so it also closes a connection that
        /// sends nothing, and an idle keep-alive connection once it has waited this long for its next request; the
        /// body is left to ``requestDeadlineSeconds``. A short one (a few seconds) suits a listener whose clients send
        /// their request as soon as they connect, such as the admin listener.
        public var headerDeadlineSeconds: UInt32 = 0
        /// Connections open at once; more are closed as soon as they are accepted (but see
        /// ``evictsWaitingConnections``).
        public var connectionLimit: UInt32 = 1024
        /// Connections open at once from one client address (`MHD_OPTION_PER_IP_CONNECTION_LIMIT`); more are closed
        /// as soon as they are accepted (0: no limit per address). Apple's notification senders use a few addresses
        /// and few connections each; a default of 128 leaves them room while no single address can take more than an
        /// eighth of ``connectionLimit``. Behind a reverse proxy every connection comes from the proxy's address: raise
        /// this to the proxy's connection count toward the server (or to ``connectionLimit``) and limit clients per
        /// address at the proxy.
        public var connectionsPerAddressLimit: UInt32 = 128
        /// What a new connection does when it would pass ``connectionLimit`` or ``connectionsPerAddressLimit``. false
        /// (the default): it is closed as soon as it is accepted. true: it stays, and the connection that has waited
        /// longest for its request is closed instead — first among those without a complete request head (from the
        /// same address when the address's limit is the one passed), then among those whose body is still arriving; a
        /// connection whose request is complete (handler running, response going out) is never closed for this, and
        /// when all are, the new one is. A client that holds many connections without finishing a request cannot keep
        /// another out, from its own address either: every new connection pushes out its oldest waiting one, while a
        /// client that sends its request as it connects has it read long before enough newer connections arrive to
        /// push it out. Closed connections are counted in ``HTTPServer/evictedConnections``. libmicrohttpd's own
        /// limits are then set wider (twice ``connectionLimit``, none per address) so that it accepts the connection
        /// that makes room; connections closed this way stay open for a moment, until their I/O thread sees them.
        public var evictsWaitingConnections: Bool = false
        /// Header fields added to every response this server sends — the handler's, and the answers it gives itself
        /// (413, 503 `server_busy` and `address_busy`, 400 and 501 for ambiguous framing, 500 for a bad handler
        /// response) — unless the
        /// response already has a field of that name (compared case-insensitively): a handler can override one for a
        /// response of its own. The admin listener sends its security headers this way. Not added to the few answers
        /// libmicrohttpd gives on its own before any of this code runs (400 for malformed HTTP, 431). Names and values
        /// are checked at ``HTTPServer/start()`` like a handler's.
        public var defaultHeaders: [(name: String, value: String)] = []
        /// Per path, the answer to a body over ``maxBodyBytes`` instead of 413 `body_too_large`: for an endpoint with
        /// a protocol of its own (verifyReceipt answers HTTP 200 with its status `21002`). Given the same way — at
        /// once, or after the body is drained — on a connection that closes after it.
        public var tooLargeAnswers: [String: ServerResponse] = [:]
        /// HTTPS when set.
        public var tls: TLS? = nil
        /// Per-connection memory for the request line and headers (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`); a request
        /// whose headers do not fit gets 431. Bodies are buffered by the server, not in this memory.
        public var headerMemoryLimitBytes: Int = 65_536
        /// How long ``HTTPServer/stop()`` waits, after ``HTTPServer/stopAccepting()``, for requests in flight to
        /// finish sending their responses.
        public var shutdownGracePeriodSeconds: UInt32 = 10
        /// Receives libmicrohttpd's error messages (one line each, no request bodies), from its threads. When nil
        /// they are only counted (``HTTPServer/loggedErrorCount``).
        public var errorLog: (@Sendable (String) -> Void)? = nil

        public init() {}
    }

    private let configuration: Configuration
    private let handler: RequestHandler
    private let log: ServerLog
    /// This run's shared state (one per start; the last one stays readable after stop).
    private var context: ServerContext?
    private var daemon: OpaquePointer?
    /// The listening socket `MHD_quiesce_daemon` handed back; ours to close after `MHD_stop_daemon`.
    private var quiescedSocket: Int32?
    /// The deadlines' watchdog thread, while one runs.
    private var watchdog: OSThread?
    /// PEM C strings libmicrohttpd reads from while it runs.
    private var tlsStrings: [UnsafeMutablePointer<CChar>] = []
    private var boundPort: UInt16 = 0

    public init(configuration: Configuration, handler: @escaping RequestHandler) {
        self.configuration = configuration
        self.handler = handler
        log = ServerLog(sink: configuration.errorLog)
    }

    deinit { stop() }

    /// The bound port once started (the kernel's choice for port 0); it stays readable after ``stop()``. 0 before the
    /// first start.
    public var port: UInt16 { boundPort }

    /// Requests that have arrived (headers complete) and not yet been answered completely, or dropped.
    public var inFlightRequests: Int { context?.inFlight ?? 0 }

    /// Request-body bytes held in memory now, across all requests (at most ``Configuration/bodyBufferBudgetBytes``).
    public var bufferedBodyBytes: Int { context?.bufferedBodies ?? 0 }

    /// Request-body bytes held in memory now for the requests of `address` (a numeric address, as
    /// ``ServerRequest/remoteAddress`` gives it); counted only while there is a share per address
    /// (``Configuration/bodyBufferPerAddressBytes``), 0 otherwise.
    public func bufferedBodyBytes(from address: String) -> Int { context?.bufferedBodies(from: address) ?? 0 }

    /// Requests answered 503 `address_busy` so far: their body did not fit in their address's share of the budget
    /// (``Configuration/bodyBufferPerAddressBytes``).
    public var addressShareRefusals: Int { context?.addressShareRefusals ?? 0 }

    /// Connections open now: accepted and not yet closed.
    public var openConnections: Int { context?.connections.openConnections ?? 0 }

    /// Connections closed so far because a request on them passed ``Configuration/requestDeadlineSeconds``, or because
    /// they waited longer than ``Configuration/headerDeadlineSeconds`` for a complete request head.
    public var deadlineClosedConnections: Int { context?.connections.expiredConnections ?? 0 }

    /// Connections closed so far to make room for a newer one (``Configuration/evictsWaitingConnections``).
    public var evictedConnections: Int { context?.connections.evictedConnections ?? 0 }

    /// How many messages libmicrohttpd has logged (bind failures, TLS handshake errors, clients gone mid-request, …).
    public var loggedErrorCount: Int { log.count }

    /// Whether libmicrohttpd keeps SIGPIPE away from the process on its own (true for the Linux build). If it is
    /// ever false, the service must ignore SIGPIPE itself before starting the server.
    public static var suppressesSIGPIPE: Bool {
        MHD_is_feature_supported(.FEATURE_AUTOSUPPRESS_SIGPIPE) == .YES
    }

    /// Binds and starts serving on libmicrohttpd's threads.
    public func start() throws(HTTPServerError) {
        guard daemon == nil else { throw HTTPServerError(.alreadyStarted, "already serving on port \(boundPort)") }
        let c = configuration
        guard (1...1024).contains(c.threads) else {
            throw HTTPServerError(.invalidConfiguration, "threads must be 1...1024, not \(c.threads)")
        }
        guard c.maxBodyBytes >= 0 else {
            throw HTTPServerError(.invalidConfiguration, "maxBodyBytes must not be negative")
        }
        guard c.connectionLimit > 0 else {
            throw HTTPServerError(.invalidConfiguration, "connectionLimit must be positive")
        }
        guard c.bodyBufferBudgetBytes >= c.maxBodyBytes else {
            throw HTTPServerError(.invalidConfiguration, "bodyBufferBudgetBytes must be at least maxBodyBytes")
        }
        guard c.bodyBufferPerAddressBytes == 0 || c.bodyBufferPerAddressBytes >= c.maxBodyBytes else {
            throw HTTPServerError(
                .invalidConfiguration,
                "bodyBufferPerAddressBytes must be 0 or at least maxBodyBytes"
            )
        }
        guard c.drainLimitBytes >= 0 else {
            throw HTTPServerError(.invalidConfiguration, "drainLimitBytes must not be negative")
        }
        if let problem = headerProblem(c.defaultHeaders) {
            throw HTTPServerError(.invalidConfiguration, "defaultHeaders: \(problem)")
        }
        guard c.headerMemoryLimitBytes >= 8192 else {
            throw HTTPServerError(.invalidConfiguration, "headerMemoryLimitBytes must be at least 8192")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = c.port.bigEndian
        guard inet_pton(AF_INET, c.host, &address.sin_addr) == 1 else {
            throw HTTPServerError(.invalidConfiguration, "host must be an IPv4 literal, not \"\(c.host)\"")
        }

        // poll(2), not epoll: with epoll, libmicrohttpd 0.9.75 (Debian 12) races MHD_quiesce_daemon against its own
        // workers, both removing the listening socket from the epoll set, and aborts the process when it loses ("Failed
        // to remove listen FD from epoll set" — seen once in CI, at a graceful shutdown). With poll, quiescing signals
        // the workers through their ITC (implied by suspend/resume) instead. The I/O threads only move bytes (handlers
        // run on the pool), so poll's cost over a few hundred connections does not show in `bench ingest`.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        var pem: (key: UnsafeMutablePointer<CChar>, certificate: UnsafeMutablePointer<CChar>)?
        if let tls = c.tls {
            guard tls.certificatePEM.contains("-----BEGIN "), tls.privateKeyPEM.contains("-----BEGIN ") else {
                throw HTTPServerError(.badTLSMaterial, "the TLS certificate and private key must be PEM text")
            }
            let key = strdup(tls.privateKeyPEM)
            let certificate = strdup(tls.certificatePEM)
            tlsStrings = [key, certificate].compactMap { $0 }
            guard let key, let certificate else {
                freeTLSStrings()
                throw HTTPServerError(.startFailed, "out of memory copying the TLS material")
            }
            pem = (key, certificate)
            flags |= MHD_USE_TLS.rawValue
        }

        guard let pool = HandlerPool(count: c.threads) else {
            freeTLSStrings()
            throw HTTPServerError(.startFailed, "cannot create \(c.threads) handler threads")
        }
        let bodies = BodyLimits(
            maxBodyBytes: c.maxBodyBytes,
            bufferBudgetBytes: c.bodyBufferBudgetBytes,
            // A share as large as the budget would only cost the bookkeeping.
            perAddressBytes: c.bodyBufferPerAddressBytes < c.bodyBufferBudgetBytes ? c.bodyBufferPerAddressBytes : 0,
            drainLimitBytes: c.drainLimitBytes
        )
        let deadline: Duration? = c.requestDeadlineSeconds > 0 ? .seconds(Int(c.requestDeadlineSeconds)) : nil
        let headerDeadline: Duration? = c.headerDeadlineSeconds > 0 ? .seconds(Int(c.headerDeadlineSeconds)) : nil
        // With eviction the tracker keeps the limits; libmicrohttpd's are widened so that it accepts the connection
        // that makes room, with headroom for evicted connections its I/O threads have not closed yet.
        let budget =
            c.evictsWaitingConnections
            ? ConnectionTracker.Budget(total: Int(c.connectionLimit), perAddress: Int(c.connectionsPerAddressLimit))
            : nil
        let mhdConnectionLimit = budget == nil ? Int(c.connectionLimit) : 2 * Int(c.connectionLimit)
        let mhdPerAddressLimit = budget == nil ? Int(c.connectionsPerAddressLimit) : 0
        let tracker = ConnectionTracker(deadline: deadline, headerDeadline: headerDeadline, budget: budget)
        let context = ServerContext(
            handler: handler,
            bodies: bodies,
            log: log,
            pool: pool,
            connections: tracker,
            defaultHeaders: c.defaultHeaders,
            plainText: c.tls == nil,
            tooLargeAnswers: c.tooLargeAnswers
        )
        let cores = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let ioThreads = min(c.threads, cores)

        let mark = log.count
        errno = 0
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let started: OpaquePointer? = withUnsafeMutablePointer(to: &address) { addressPointer in
            var options: [MHD_OptionItem] = [
                MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: c.headerMemoryLimitBytes, ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_LIMIT, value: mhdConnectionLimit, ptr_value: nil),
                MHD_OptionItem(option: .PER_IP_CONNECTION_LIMIT, value: mhdPerAddressLimit, ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: Int(c.connectionTimeoutSeconds), ptr_value: nil),
                MHD_OptionItem(option: .SOCK_ADDR, value: 0, ptr_value: UnsafeMutableRawPointer(addressPointer)),
                // Strict parsing: sloppy syntax (such as whitespace before a header's colon) is refused rather than
                // guessed at, leaving less room for a proxy in front to read a request differently.
                MHD_OptionItem(option: .STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
            ]
            if ioThreads > 1 {
                options.append(MHD_OptionItem(option: .THREAD_POOL_SIZE, value: ioThreads, ptr_value: nil))
            }
            if let pem {
                let key = UnsafeMutableRawPointer(pem.key)
                let certificate = UnsafeMutableRawPointer(pem.certificate)
                options.append(MHD_OptionItem(option: .HTTPS_MEM_KEY, value: 0, ptr_value: key))
                options.append(MHD_OptionItem(option: .HTTPS_MEM_CERT, value: 0, ptr_value: certificate))
            }
            options.append(MHD_OptionItem(option: .END, value: 0, ptr_value: nil))
            return options.withUnsafeBufferPointer { items in
                gateway_mhd_start(
                    flags,
                    c.port,
                    gatewayAccessHandler,
                    contextPointer,
                    gatewayRequestCompleted,
                    contextPointer,
                    gatewayConnectionNotice,
                    contextPointer,
                    gatewayLog,
                    contextPointer,
                    items.baseAddress
                )
            }
        }
        let startErrno = errno

        guard let started else {
            pool.shutdown()
            freeTLSStrings()
            let messages = log.messages(since: mark)
            let detail = messages.isEmpty ? "errno \(startErrno)" : messages.joined(separator: "; ")
            let reason = "cannot serve on \(c.host):\(c.port): \(detail)"
            // libmicrohttpd reports no error code, only messages (errno is left over from whichever call failed
            // last, often not the one that mattered): its own words decide first.
            if messages.contains(where: { $0.contains("Address already in use") }) {
                throw HTTPServerError(.addressInUse, reason)
            }
            let tlsWords = ["TLS", "certificate", "key", "x509", "X.509"]
            if c.tls != nil, messages.contains(where: { m in tlsWords.contains { m.contains($0) } }) {
                throw HTTPServerError(.badTLSMaterial, reason)
            }
            if messages.isEmpty, startErrno == EADDRINUSE { throw HTTPServerError(.addressInUse, reason) }
            throw HTTPServerError(.startFailed, reason)
        }
        daemon = started
        self.context = context
        boundPort = gateway_mhd_bound_port(started)
        if tracker.needsWatchdog {
            guard let thread = OSThread.start(name: ThreadName.watchdog, { tracker.runWatchdog() }) else {
                stop()
                throw HTTPServerError(.startFailed, "cannot create the deadlines' watchdog thread")
            }
            watchdog = thread
        }
    }

    /// Stops accepting new connections (`MHD_quiesce_daemon`; the listening socket is also shut down so that new
    /// connection attempts are refused at once instead of waiting in the kernel's backlog). Requests in flight
    /// finish and their responses are delivered, marked `Connection: close`. Idempotent; does nothing before start.
    public func stopAccepting() {
        guard let daemon, let context, quiescedSocket == nil else { return }
        context.setQuiescing(true)
        let socket = MHD_quiesce_daemon(daemon)
        guard socket != MHD_INVALID_SOCKET else { return }
        quiescedSocket = socket
        // The fd stays open (libmicrohttpd's threads may still hold it) until after MHD_stop_daemon.
        _ = shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Closes everything and joins the server's threads (`MHD_stop_daemon`, then the handler pool). After
    /// ``stopAccepting()`` it first waits up to ``Configuration/shutdownGracePeriodSeconds`` for requests in flight
    /// to complete and their responses to go out. Without it, open connections are cut at once: a handler already
    /// running is still waited for (it cannot be interrupted), but its response may not be delivered. Idempotent;
    /// also run at deinit.
    public func stop() {
        guard let daemon, let context else { return }
        if quiescedSocket != nil, configuration.shutdownGracePeriodSeconds > 0 {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(Int(configuration.shutdownGracePeriodSeconds)))
            while context.inFlight > 0, clock.now < deadline { usleep(2_000) }
        }
        // From here handlers run on libmicrohttpd's threads; wait until every suspended connection is resumed.
        context.closeDispatch()
        while context.suspendedConnections > 0 { usleep(1_000) }
        MHD_stop_daemon(daemon)
        // Every connection is closed now (their close notifications have emptied the watchdog's table).
        if let watchdog {
            context.connections.stopWatchdog()
            watchdog.join()
            self.watchdog = nil
        }
        context.pool.shutdown()
        self.daemon = nil
        if let socket = quiescedSocket {
            close(socket)
            quiescedSocket = nil
        }
        freeTLSStrings()
    }

    /// Frees the PEM copies, wiping the private key first.
    private func freeTLSStrings() {
        for string in tlsStrings {
            memset(string, 0, strlen(string))
            free(string)
        }
        tlsStrings = []
    }
}
