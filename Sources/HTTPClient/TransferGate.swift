import Synchronization

/// An async counting semaphore: at most `limit` holders at a time; the others wait in FIFO order without blocking a
/// thread. ``CurlTransport`` takes a slot before it hands a transfer to its dispatch queue, so a burst of requests
/// waits here instead of parking one dispatch thread per request; ``GatedTransport`` gives each purpose slots of its
/// own.
///
/// Waiting is not cancellable: a cancelled task still waits for its slot (every holder's transfer is bounded by its
/// own deadline) and then fails fast before touching curl. A wait can be given a timeout instead
/// (``acquire(timeout:)``): the slot is then either granted or the wait given up, never both.
final class TransferGate: Sendable {
    private struct State {
        var available: Int
        /// Waiters by ticket, and the tickets in arrival order (a ticket whose waiter timed out is skipped).
        var waiting: [Int: CheckedContinuation<Bool, Never>] = [:]
        var order: [Int] = []
        /// Index of the oldest ticket in `order` (a queue without O(n) `removeFirst`).
        var head = 0
        var nextTicket = 0
        /// Tickets handed out whose waiter is not queued yet, and those of them whose timeout already came (their
        /// waiter is refused as it arrives).
        var unqueued: Set<Int> = []
        var expiredEarly: Set<Int> = []

        /// The oldest waiter still waiting, taken off the queue.
        mutating func takeOldest() -> CheckedContinuation<Bool, Never>? {
            while head < order.count {
                let ticket = order[head]
                head += 1
                if let waiter = waiting.removeValue(forKey: ticket) {
                    compact()
                    return waiter
                }
            }
            compact()
            return nil
        }

        private mutating func compact() {
            if head == order.count {
                order.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= order.count {
                // A queue that never drains completely must not grow forever.
                order.removeFirst(head)
                head = 0
            }
        }
    }

    private let state: Mutex<State>

    init(limit: Int) {
        precondition(limit > 0, "TransferGate needs at least one slot")
        state = Mutex(State(available: limit))
    }

    /// Slots free now.
    var available: Int { state.withLock { $0.available } }

    func acquire() async { _ = await acquire(timeout: nil) }

    /// Takes a slot, waiting at most `timeout` (nil: as long as it takes): true once it is held, false when the wait
    /// was given up (then nothing is held).
    func acquire(timeout: Duration?) async -> Bool {
        let ticket: Int? = state.withLock { s in
            if s.available > 0 {
                s.available -= 1
                return nil
            }
            s.nextTicket += 1
            s.unqueued.insert(s.nextTicket)
            return s.nextTicket
        }
        guard let ticket else { return true }
        let timer = timeout.map { timeout in
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(ticket)
            }
        }
        defer { timer?.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            // Re-check under the lock: a slot may have been released between the first look and here.
            let answer = state.withLock { s -> Bool? in
                s.unqueued.remove(ticket)
                if s.expiredEarly.remove(ticket) != nil { return false }
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiting[ticket] = continuation
                s.order.append(ticket)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Gives up the wait of `ticket`, if it still waits.
    private func expire(_ ticket: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            if let waiter = s.waiting.removeValue(forKey: ticket) { return waiter }
            // Not queued yet: refused as it arrives. (Already granted: nothing to give up.)
            if s.unqueued.contains(ticket) { s.expiredEarly.insert(ticket) }
            return nil
        }
        waiter?.resume(returning: false)
    }

    /// Hands the slot to the oldest waiter, or returns it to the pool.
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard let waiter = s.takeOldest() else {
                s.available += 1
                return nil
            }
            return waiter
        }
        next?.resume(returning: true)
    }
}
