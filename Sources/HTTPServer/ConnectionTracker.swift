internal import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// Every open connection, the phase of the request on it, and the watchdog that enforces the deadlines:
/// ``HTTPServer/Configuration/requestDeadlineSeconds`` (a request must arrive whole — request line, headers and body —
/// within the deadline, however steadily its bytes trickle in) and ``HTTPServer/Configuration/headerDeadlineSeconds``
/// (a connection must deliver a complete request head within it, counted from its accept or the end of its previous
/// request). With ``HTTPServer/Configuration/evictsWaitingConnections`` it also keeps the connection budget itself,
/// making room for a new connection by closing the one that has waited longest for its request (``opened(_:)``).
///
/// libmicrohttpd 0.9.75 only has an inactivity timeout, which every byte resets, so a client sending one byte every
/// few seconds would hold its connection (and a slot of the connection limits) for ever. It has no total deadline and
/// no way for another thread to close a connection, so the deadlines are built from what it does offer:
///
/// - `MHD_OPTION_NOTIFY_CONNECTION` reports each connection when it starts (``opened(_:)``) and when it is closed
///   (``closed(_:)``); the table keeps each one's socket and phase under one lock.
/// - The access handler and the completion callback move a connection through the phases of each request (see
///   ``Phase``).
/// - The watchdog thread (``runWatchdog()``) wakes a few times per deadline and, for each connection whose request has
///   been arriving for longer than the deadline, calls `shutdown(fd, SHUT_RDWR)` under the lock. libmicrohttpd's I/O
///   thread then reads end-of-file and closes the connection its usual way (completion callback, close notification,
///   `close`), so no libmicrohttpd state is touched from the watchdog. An eviction closes a connection the same way,
///   from the I/O thread that accepted the new one.
///
/// Why the fd is safe to shut down: libmicrohttpd 0.9.75 closes a connection's socket only in
/// `MHD_cleanup_connections` (and in the failure path of `new_connection_process_`), and in both it calls the close
/// notification first, before `close(fd)`. ``closed(_:)`` removes the entry under the same lock the watchdog holds
/// while it calls `shutdown`, so the watchdog only ever sees the fd while libmicrohttpd still has it open: it cannot hit
/// a number the kernel has since given to another socket.
///
/// A connection whose request is complete (its handler running on the pool with the connection suspended, or its
/// response being sent) is never shut down by a deadline nor evicted; a slow reader of a response is the inactivity
/// timeout's business. The request deadline leaves an idle keep-alive connection alone: it starts with the first byte
/// of the next request. libmicrohttpd does not report that byte, so the watchdog asks the kernel (`TCP_INFO`'s
/// `tcpi_bytes_received`, Linux 4.1+) whether any arrived since the previous request completed. A pipelined request
/// whose first bytes came before that moment starts its clock at its headers or at its next byte instead (a little
/// more time, never less). Where the kernel cannot say, the deadline counts from the previous request's completion (or
/// the accept). The header deadline needs no byte to start: an idle keep-alive connection is waiting for headers too,
/// and is closed once it has waited that long.
final class ConnectionTracker: Sendable {
    /// Where the current request of a connection is.
    enum Phase: Sendable {
        /// Between requests, or before the first: no byte of a new request seen. `baseline` is how many bytes the
        /// kernel had received on the socket at `since`; nil when it cannot tell (then the deadline counts from
        /// `since`).
        case idle(since: ContinuousClock.Instant, baseline: UInt64?)
        /// The request is arriving; the deadline counts from `since`.
        case receiving(since: ContinuousClock.Instant)
        /// The request is complete (or refused early): the handler runs or the response is being sent.
        case answering
        /// Shut down (by a deadline, or evicted); libmicrohttpd closes it shortly.
        case expired
    }

    /// The connections the tracker itself keeps to (``HTTPServer/Configuration/evictsWaitingConnections``).
    struct Budget: Sendable {
        /// Connections open at once.
        var total: Int
        /// Connections open at once from one client address; 0: no limit per address.
        var perAddress: Int
    }

    private struct Entry {
        let fd: Int32
        /// The client's numeric address, when there is a budget per address to keep ("" otherwise).
        let address: String
        var phase: Phase
        /// Since when the connection has waited for the complete head of its current request: its accept, or the end
        /// of its previous request. nil once the head is in.
        var awaitingHeadSince: ContinuousClock.Instant?
        /// While a chunked body arrives: the libmicrohttpd I/O thread that reads it (see ``takeOverChunkedBody(answer:)``).
        var chunkedBodyReader: pthread_t?

        var isLive: Bool {
            if case .expired = phase { return false }
            return true
        }
    }

    /// How long a request may take to arrive; nil: no deadline (connections are still counted).
    let deadline: Duration?
    /// How long a connection may wait for a complete request head; nil: no such deadline.
    let headerDeadline: Duration?
    /// The budget this tracker keeps by eviction; nil: libmicrohttpd's own limits apply (new connections refused).
    let budget: Budget?
    private let table = Mutex<[UInt: Entry]>([:])
    private let expiredCount = Atomic<Int>(0)
    private let evictedCount = Atomic<Int>(0)
    private let stopRequested = Atomic<Bool>(false)
    /// Signalled to end the watchdog's wait early, at stop.
    private let wake = DispatchSemaphore(value: 0)

    init(deadline: Duration?, headerDeadline: Duration? = nil, budget: Budget? = nil) {
        (self.deadline, self.headerDeadline, self.budget) = (deadline, headerDeadline, budget)
    }

    /// Whether a watchdog thread is needed: some deadline is set.
    var needsWatchdog: Bool { deadline != nil || headerDeadline != nil }

    /// Connections open now (accepted and not yet closed by libmicrohttpd).
    var openConnections: Int { table.withLock { $0.count } }

    /// Connections a deadline has shut down so far.
    var expiredConnections: Int { expiredCount.load(ordering: .relaxed) }

    /// Connections closed so far to make room for a newer one (``opened(_:)``).
    var evictedConnections: Int { evictedCount.load(ordering: .relaxed) }

    // MARK: Events (libmicrohttpd's threads)

    /// A connection was accepted (`MHD_CONNECTION_NOTIFY_STARTED`, on the I/O thread that accepted it).
    ///
    /// With a ``budget``, a connection that takes the open connections past it (from its address, or in all) makes
    /// room for itself: the connection that has waited longest for its request is closed — first among those still
    /// without a complete request head, then among those whose body is still arriving — and when every other
    /// connection has a complete request (its handler running, its response going out), the new one is closed
    /// instead. A client holding many connections without finishing a request on them cannot keep another out: each
    /// new connection pushes out its oldest waiting one, while a client that sends its request at once has its head
    /// read long before that many newer connections arrive.
    func opened(_ connection: OpaquePointer) {
        let fd = gateway_mhd_connection_fd(connection)
        guard fd >= 0 else { return }  // no socket to shut down: only the inactivity timeout applies
        var bytes: UInt64 = 0
        // Any byte on a new connection belongs to its first request (including a TLS handshake), so the baseline is
        // 0 — unless the kernel cannot report bytes at all.
        let baseline: UInt64? = gateway_tcp_bytes_received(fd, &bytes) == 0 ? 0 : nil
        var port: UInt16 = 0
        let address = (budget?.perAddress ?? 0) > 0 ? clientAddress(connection, port: &port) : ""
        let now = ContinuousClock.now
        let entry = Entry(
            fd: fd,
            address: address,
            phase: .idle(since: now, baseline: baseline),
            awaitingHeadSince: now
        )
        let newcomer = key(connection)
        table.withLock { entries in
            entries[newcomer] = entry
            guard let budget else { return }
            if budget.perAddress > 0 {
                let fromAddress = entries.filter { $0.value.isLive && $0.value.address == address }
                if fromAddress.count > budget.perAddress { evict(among: fromAddress, for: newcomer, in: &entries) }
            }
            guard entries[newcomer]?.isLive == true else { return }
            let live = entries.filter { $0.value.isLive }
            if live.count > budget.total { evict(among: live, for: newcomer, in: &entries) }
        }
    }

    /// Closes one of `candidates` to make room for `newcomer` (see ``opened(_:)``); called under the table's lock.
    private func evict(among candidates: [UInt: Entry], for newcomer: UInt, in entries: inout [UInt: Entry]) {
        let others = candidates.filter { $0.key != newcomer }
        let withoutHead = others.compactMap { item in item.value.awaitingHeadSince.map { (item.key, $0) } }
        let bodyArriving = others.compactMap { item -> (UInt, ContinuousClock.Instant)? in
            guard item.value.awaitingHeadSince == nil, case .receiving(let since) = item.value.phase else { return nil }
            return (item.key, since)
        }
        let oldest = { (list: [(UInt, ContinuousClock.Instant)]) in list.min { $0.1 < $1.1 }?.0 }
        let victim = oldest(withoutHead) ?? oldest(bodyArriving) ?? newcomer
        guard let fd = entries[victim]?.fd else { return }
        if victim != newcomer { evictedCount.add(1, ordering: .relaxed) }
        // The fd is libmicrohttpd's and open: its close notification needs this lock (see the type's documentation).
        _ = shutdown(fd, Int32(SHUT_RDWR))
        entries[victim]?.phase = .expired
    }

    /// libmicrohttpd is about to close the connection's socket (`MHD_CONNECTION_NOTIFY_CLOSED`, which 0.9.75 calls
    /// before `close`): from here the watchdog no longer sees its fd.
    func closed(_ connection: OpaquePointer) {
        _ = table.withLock { $0.removeValue(forKey: key(connection)) }
    }

    /// The request's headers are complete (first access-handler call, on the I/O thread that serves the connection).
    /// Its clock runs from here at the latest; the header deadline no longer applies to it. `chunkedBody`: its body
    /// comes in `Transfer-Encoding: chunked`, decoded by libmicrohttpd on this thread.
    func requestArriving(_ connection: OpaquePointer, chunkedBody: Bool) {
        let reader: pthread_t? = chunkedBody ? pthread_self() : nil
        table.withLock { entries in
            guard let entry = entries[key(connection)], entry.isLive else { return }
            entries[key(connection)]?.awaitingHeadSince = nil
            entries[key(connection)]?.chunkedBodyReader = reader
            guard case .idle = entry.phase else { return }
            entries[key(connection)]?.phase = .receiving(since: .now)
        }
    }

    /// The request has arrived whole, or been answered before its body: the deadline no longer applies to it.
    /// Called before the connection is suspended for its handler.
    func requestAnswering(_ connection: OpaquePointer) {
        table.withLock { entries in
            guard let phase = entries[key(connection)]?.phase else { return }
            if case .expired = phase { return }
            entries[key(connection)]?.phase = .answering
            entries[key(connection)]?.chunkedBodyReader = nil
        }
    }

    /// libmicrohttpd, on the calling I/O thread, is refusing a chunked body it is decoding with an answer of its own
    /// (an HTML page; see ``HTTPServer``): it says so in its log before it queues that answer, and names no
    /// connection. When exactly one connection's chunked body arrives on this thread, that is the one: `answer` (a
    /// complete HTTP response, nil for none, as over TLS) is written on its socket and the socket is shut down, so
    /// libmicrohttpd's own answer can no longer be sent; it then closes the connection its usual way. With several
    /// chunked bodies arriving on the thread at once the server cannot tell which, and leaves the answer to
    /// libmicrohttpd: false.
    ///
    /// The socket is libmicrohttpd's and idle for writing: the request has sent nothing back yet (a `100 Continue` is
    /// sent whole before body bytes are read), and the calling thread, which alone sends on it, is inside the log
    /// call. The fd is open while its entry is in the table (see the type's documentation).
    func takeOverChunkedBody(answer: [UInt8]?) -> Bool {
        let reader = pthread_self()
        return table.withLock { entries in
            // Counted whatever their phase: one a deadline has just shut down may be the one refused, and must not
            // leave another looking like the only candidate.
            let arriving = entries.filter { item in
                item.value.chunkedBodyReader.map { pthread_equal($0, reader) != 0 } ?? false
            }
            guard arriving.count == 1, let (connection, entry) = arriving.first else { return false }
            // Already shut down (by a deadline): libmicrohttpd's answer cannot go out either.
            guard entry.isLive else { return true }
            if let answer {
                // Non-blocking: a small answer on an idle socket goes out whole; if it did not, the client gets a cut
                // answer, never libmicrohttpd's.
                _ = answer.withUnsafeBytes {
                    send(entry.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
            }
            _ = shutdown(entry.fd, Int32(SHUT_RDWR))
            entries[connection]?.phase = .expired
            entries[connection]?.chunkedBodyReader = nil
            return true
        }
    }

    /// The request is over (response sent, or dropped): the connection waits for its next request, if any.
    func requestCompleted(_ connection: OpaquePointer) {
        table.withLock { entries in
            guard let entry = entries[key(connection)] else { return }
            if case .expired = entry.phase { return }
            var bytes: UInt64 = 0
            // The fd is open: libmicrohttpd is inside this connection's completion callback, and the close notification
            // (which would remove the entry) needs this lock.
            let baseline: UInt64? = gateway_tcp_bytes_received(entry.fd, &bytes) == 0 ? bytes : nil
            let now = ContinuousClock.now
            entries[key(connection)]?.phase = .idle(since: now, baseline: baseline)
            entries[key(connection)]?.awaitingHeadSince = now
            entries[key(connection)]?.chunkedBodyReader = nil
        }
    }

    // MARK: Watchdog

    /// How often the watchdog looks: a tenth of the shorter deadline, between 50 ms and 1 s, so a connection is cut at
    /// most about a tenth (and at most a second) after its deadline.
    var sweepInterval: Duration {
        guard let shortest = [deadline, headerDeadline].compactMap({ $0 }).min() else { return .seconds(1) }
        return min(max(shortest / 10, .milliseconds(50)), .seconds(1))
    }

    /// The watchdog thread's body: sweeps every ``sweepInterval`` until ``stopWatchdog()``.
    func runWatchdog() {
        let interval = sweepInterval
        let nanoseconds =
            Int(interval.components.seconds) * 1_000_000_000
            + Int(interval.components.attoseconds / 1_000_000_000)
        while !stopRequested.load(ordering: .acquiring) {
            _ = wake.wait(timeout: .now() + .nanoseconds(nanoseconds))
            guard !stopRequested.load(ordering: .acquiring) else { return }
            sweep(now: .now)
        }
    }

    /// Makes ``runWatchdog()`` return soon; the owner then joins the thread.
    func stopWatchdog() {
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Starts the clock of connections whose next request has begun, and shuts down those past a deadline: the header
    /// deadline for a connection still without a complete request head, the request deadline for a request arriving.
    func sweep(now: ContinuousClock.Instant) {
        guard needsWatchdog else { return }
        table.withLock { entries in
            for index in entries.indices {
                let entry = entries.values[index]
                if let headerDeadline, let since = entry.awaitingHeadSince, entry.isLive, now - since >= headerDeadline
                {
                    expire(entry, at: index, in: &entries)
                    continue
                }
                guard let deadline else { continue }
                switch entry.phase {
                case .idle(_, let baseline?):
                    var bytes: UInt64 = 0
                    if gateway_tcp_bytes_received(entry.fd, &bytes) == 0, bytes > baseline {
                        // A byte of a new request came since the last look; when exactly is unknown, so the clock
                        // starts now (at most one sweep late: the client gets that much longer, never less). Until
                        // then an idle connection is left to the inactivity timeout (and the header deadline).
                        entries.values[index].phase = .receiving(since: now)
                    }
                case .idle(let since, nil), .receiving(let since):
                    guard now - since >= deadline else { continue }
                    expire(entry, at: index, in: &entries)
                case .answering, .expired:
                    continue
                }
            }
        }
    }

    /// Shuts down a connection past a deadline; called under the table's lock.
    private func expire(_ entry: Entry, at index: Dictionary<UInt, Entry>.Index, in entries: inout [UInt: Entry]) {
        // Counted before the client can see its connection end, so that a reader of the count never sees a closed
        // connection it does not include.
        expiredCount.add(1, ordering: .relaxed)
        // Under the lock: the fd is still libmicrohttpd's (see the type's documentation). SHUT_RDWR wakes its poll with
        // end-of-file, and it closes the connection itself.
        _ = shutdown(entry.fd, Int32(SHUT_RDWR))
        entries.values[index].phase = .expired
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: connection)) }
}
