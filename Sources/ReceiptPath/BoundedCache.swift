import Synchronization

/// A map that keeps at most `maxEntries` values whose costs add up to at most `maxCost`, dropping the oldest insertions
/// first (docs/architecture.md, "The receipt path"). For values that are expensive to make and cheap to make again:
/// what it dropped is made again, never wrong. Safe to share between threads.
package final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var values: [Key: (value: Value, cost: Int)] = [:]
        /// Insertion order, oldest first from `head`; keys already removed are skipped when reached.
        var order: [Key] = []
        var head = 0
        var cost = 0
    }

    package let maxEntries: Int
    package let maxCost: Int
    private let state = Mutex(State())

    package init(maxEntries: Int, maxCost: Int) {
        (self.maxEntries, self.maxCost) = (max(0, maxEntries), max(0, maxCost))
    }

    package subscript(key: Key) -> Value? { state.withLock { $0.values[key]?.value } }

    package var count: Int { state.withLock { $0.values.count } }

    /// Keeps `value` under `key` (replacing what was there), unless it alone costs more than the whole budget.
    package func insert(_ value: Value, for key: Key, cost: Int) {
        guard maxEntries > 0, cost <= maxCost else { return }
        state.withLock { s in
            if let old = s.values.updateValue((value, cost), forKey: key) {
                s.cost -= old.cost
            } else {
                s.order.append(key)
            }
            s.cost += cost
            while s.values.count > maxEntries || s.cost > maxCost, s.head < s.order.count {
                let oldest = s.order[s.head]
                s.head += 1
                if oldest == key {
                    s.order.append(key)  // the value just kept stays; it is the newest now
                } else if let gone = s.values.removeValue(forKey: oldest) {
                    s.cost -= gone.cost
                }
            }
            // The order list is compacted once half of it is keys already dropped.
            if s.head > 16 && s.head * 2 > s.order.count {
                s.order.removeFirst(s.head)
                s.head = 0
            }
        }
    }
}
