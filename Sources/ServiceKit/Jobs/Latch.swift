import Synchronization

/// A gate that opens once and stays open: ``wait()`` returns when it is open (at once, after).
package final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    package init() {}

    package var isOpen: Bool { state.withLock { $0.isOpen } }

    package func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard !s.isOpen else { return [] }
            s.isOpen = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                guard !s.isOpen else { return true }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
