internal import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// Every open connection, the phase of the request on it, and the watchdog that enforces
/// ``HTTPServer/Configuration/requestDeadlineSeconds``: a request must arrive whole (request line, headers and body)
/// within the deadline, however steadily its bytes trickle in.
///
/// libmicrohttpd 0.9.75 only has an inactivity timeout, which every byte resets, so a client sending one byte every
/// few seconds would hold its connection (and a slot of the connection limits) for ever. It has no total deadline and
/// no way for another thread to close a connection, so the deadline is built from what it does offer:
///
/// - `MHD_OPTION_NOTIFY_CONNECTION` reports each connection when it starts (``opened(_:)``) and when it is closed
///   (``closed(_:)``); the table keeps each one's socket and phase under one lock.
/// - The access handler and the completion callback move a connection through the phases of each request (see
///   ``Phase``).
/// - The watchdog thread (``runWatchdog()``) wakes a few times per deadline and, for each connection whose request has
///   been arriving for longer than the deadline, calls `shutdown(fd, SHUT_RDWR)` under the lock. libmicrohttpd's I/O
///   thread then reads end-of-file and closes the connection its usual way (completion callback, close notification,
///   `close`), so no libmicrohttpd state is touched from the watchdog.
///
/// Why the fd is safe to shut down: libmicrohttpd 0.9.75 closes a connection's socket only in
/// `MHD_cleanup_connections` (and in the failure path of `new_connection_process_`), and in both it calls the close
/// notification first, before `close(fd)`. ``closed(_:)`` removes the entry under the same lock the watchdog holds
/// while it calls `shutdown`, so the watchdog only ever sees the fd while libmicrohttpd still has it open: it cannot hit
/// a number the kernel has since given to another socket.
///
/// A connection whose request is complete (its handler running on the pool with the connection suspended, or its
/// response being sent) is never shut down by the deadline; a slow reader of a response is the inactivity timeout's
/// business. Neither is an idle keep-alive connection: the deadline starts with the first byte of the next request.
/// libmicrohttpd does not report that byte, so the watchdog asks the kernel (`TCP_INFO`'s `tcpi_bytes_received`,
/// Linux 4.1+) whether any arrived since the previous request completed. A pipelined request whose first bytes came
/// before that moment starts its clock at its headers or at its next byte instead (a little more time, never less).
/// Where the kernel cannot say, the deadline counts from the previous request's completion (or the accept).
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
        /// Shut down by the watchdog; libmicrohttpd closes it shortly.
        case expired
    }

    private struct Entry {
        let fd: Int32
        var phase: Phase
    }

    /// How long a request may take to arrive; nil: no deadline (connections are still counted).
    let deadline: Duration?
    private let table = Mutex<[UInt: Entry]>([:])
    private let expiredCount = Atomic<Int>(0)
    private let stopRequested = Atomic<Bool>(false)
    /// Signalled to end the watchdog's wait early, at stop.
    private let wake = DispatchSemaphore(value: 0)

    init(deadline: Duration?) { self.deadline = deadline }

    /// Connections open now (accepted and not yet closed by libmicrohttpd).
    var openConnections: Int { table.withLock { $0.count } }

    /// Connections the deadline has shut down so far.
    var expiredConnections: Int { expiredCount.load(ordering: .relaxed) }

    // MARK: Events (libmicrohttpd's threads)

    /// A connection was accepted (`MHD_CONNECTION_NOTIFY_STARTED`).
    func opened(_ connection: OpaquePointer) {
        let fd = gateway_mhd_connection_fd(connection)
        guard fd >= 0 else { return }  // no socket to shut down: only the inactivity timeout applies
        var bytes: UInt64 = 0
        // Any byte on a new connection belongs to its first request (including a TLS handshake), so the baseline is
        // 0 — unless the kernel cannot report bytes at all.
        let baseline: UInt64? = gateway_tcp_bytes_received(fd, &bytes) == 0 ? 0 : nil
        let entry = Entry(fd: fd, phase: .idle(since: .now, baseline: baseline))
        table.withLock { $0[key(connection)] = entry }
    }

    /// libmicrohttpd is about to close the connection's socket (`MHD_CONNECTION_NOTIFY_CLOSED`, which 0.9.75 calls
    /// before `close`): from here the watchdog no longer sees its fd.
    func closed(_ connection: OpaquePointer) {
        _ = table.withLock { $0.removeValue(forKey: key(connection)) }
    }

    /// The request's headers are complete (first access-handler call). Its clock runs from here at the latest.
    func requestArriving(_ connection: OpaquePointer) {
        table.withLock { entries in
            guard case .idle = entries[key(connection)]?.phase else { return }
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
            entries[key(connection)]?.phase = .idle(since: .now, baseline: baseline)
        }
    }

    // MARK: Watchdog

    /// How often the watchdog looks: a tenth of the deadline, between 50 ms and 1 s, so a request is cut at most
    /// about a tenth (and at most a second) after its deadline.
    var sweepInterval: Duration {
        guard let deadline else { return .seconds(1) }
        return min(max(deadline / 10, .milliseconds(50)), .seconds(1))
    }

    /// The watchdog thread's body: sweeps every ``sweepInterval`` until ``stopWatchdog()``.
    func runWatchdog() {
        let interval = sweepInterval
        let nanoseconds = Int(interval.components.seconds) * 1_000_000_000
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

    /// Starts the clock of connections whose next request has begun, and shuts down those past the deadline.
    func sweep(now: ContinuousClock.Instant) {
        guard let deadline else { return }
        table.withLock { entries in
            for index in entries.indices {
                let entry = entries.values[index]
                switch entry.phase {
                case .idle(_, let baseline?):
                    var bytes: UInt64 = 0
                    if gateway_tcp_bytes_received(entry.fd, &bytes) == 0, bytes > baseline {
                        // A byte of a new request came since the last look; when exactly is unknown, so the clock
                        // starts now (at most one sweep late: the client gets that much longer, never less). Until
                        // then an idle connection is left to the inactivity timeout.
                        entries.values[index].phase = .receiving(since: now)
                    }
                case .idle(let since, nil), .receiving(let since):
                    guard now - since >= deadline else { continue }
                    // Counted before the client can see its connection end, so that a reader of the count never
                    // sees a closed connection it does not include.
                    expiredCount.add(1, ordering: .relaxed)
                    // Under the lock: the fd is still libmicrohttpd's (see the type's documentation). SHUT_RDWR
                    // wakes its poll with end-of-file, and it closes the connection itself.
                    _ = shutdown(entry.fd, Int32(SHUT_RDWR))
                    entries.values[index].phase = .expired
                case .answering, .expired:
                    continue
                }
            }
        }
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: connection)) }
}
