package import Store

/// The customers waiting for a history fetch that no request waits for (docs/operations.md, "The receipt path at
/// scale"): oldest first, each at most once, at most `capacity` of them. ``ReceiptHistories`` starts them as
/// background places free up.
package struct ReceiptFetchQueue {
    /// What ``push(_:)`` did.
    package enum Pushed: Equatable {
        case queued
        /// Queued already: nothing changed.
        case present
        /// Full: not queued.
        case dropped
    }

    package let capacity: Int
    private var keys: [ReceiptHistoryKey] = []
    /// Where the oldest key is in `keys`; the ones before were taken.
    private var head = 0
    private var members: Set<ReceiptHistoryKey> = []

    package init(capacity: Int) { self.capacity = max(0, capacity) }

    /// Customers waiting now.
    package var count: Int { members.count }

    package mutating func push(_ key: ReceiptHistoryKey) -> Pushed {
        guard !members.contains(key) else { return .present }
        guard members.count < capacity else { return .dropped }
        members.insert(key)
        keys.append(key)
        return .queued
    }

    /// The oldest customer waiting, taken out of the queue.
    package mutating func pop() -> ReceiptHistoryKey? {
        guard head < keys.count else { return nil }
        let key = keys[head]
        head += 1
        members.remove(key)
        // Compacted once half of it is taken keys.
        if head > 64, head * 2 > keys.count {
            keys.removeFirst(head)
            head = 0
        }
        return key
    }
}
