import Synchronization

/// An async counting semaphore: at most `limit` holders at a time; the others wait in FIFO order without blocking a
/// thread. ``CurlTransport`` takes a slot before it hands a transfer to its dispatch queue, so a burst of requests
/// waits here instead of parking one dispatch thread per request.
///
/// Waiting is not cancellable: a cancelled task still waits for its slot (every holder's transfer is bounded by its
/// own deadline) and then fails fast before touching curl.
final class TransferGate: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Index of the oldest waiter in `waiters` (a queue without O(n) `removeFirst`).
        var head = 0
    }

    private let state: Mutex<State>

    init(limit: Int) {
        precondition(limit > 0, "TransferGate needs at least one slot")
        state = Mutex(State(available: limit))
    }

    func acquire() async {
        let granted = state.withLock { s in
            guard s.available > 0 else { return false }
            s.available -= 1
            return true
        }
        if granted { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Re-check under the lock: a slot may have been released between the fast path and here.
            let grantedNow = state.withLock { s in
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if grantedNow { continuation.resume() }
        }
    }

    /// Hands the slot to the oldest waiter, or returns it to the pool.
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.head < s.waiters.count else {
                s.available += 1
                return nil
            }
            let waiter = s.waiters[s.head]
            s.head += 1
            if s.head == s.waiters.count {
                s.waiters.removeAll(keepingCapacity: true)
                s.head = 0
            } else if s.head >= 64, s.head * 2 >= s.waiters.count {
                // A queue that never drains completely must not grow forever.
                s.waiters.removeFirst(s.head)
                s.head = 0
            }
            return waiter
        }
        next?.resume()
    }
}
