import Synchronization

/// The ids a worker is working on, by lane. A poll reads its table without holding this lock, so a job that
/// finishes — commits its outcome, then leaves the set — while that read is under way can still look due in the rows
/// it returns. Ids finished since the current read began therefore stay busy for that one poll: no job is ever
/// started twice.
package final class InFlightSet: Sendable {
    package init() {}

    package struct Claims {
        fileprivate(set) var flying: [Int64: String] = [:]
        fileprivate var finished: Set<Int64> = []
        package func isBusy(_ id: Int64) -> Bool { flying[id] != nil || finished.contains(id) }
        package var count: Int { flying.count }
        /// The jobs in flight and those finished since the read began: none is due to this poll.
        package var running: [Int64] { Array(flying.keys) + finished }
        package func count(lane: String) -> Int { flying.values.reduce(0) { $0 + ($1 == lane ? 1 : 0) } }
        package func isFlying(_ id: Int64) -> Bool { flying[id] != nil }
        package mutating func claim(_ id: Int64, lane: String = "") { flying[id] = lane }
        /// The job's outcome is committed: its slot is free, and it is not due to the poll under way.
        package mutating func finish(_ id: Int64) {
            if flying.removeValue(forKey: id) != nil { finished.insert(id) }
        }
    }

    private let state = Mutex(Claims())

    /// Call right before reading due rows.
    package func beginRead() { state.withLock { $0.finished.removeAll(keepingCapacity: true) } }
    /// Picks jobs from rows read since ``beginRead()``.
    package func claim<T>(_ body: (inout Claims) -> T) -> T { state.withLock { body(&$0) } }
    /// Call once the job's outcome is committed.
    package func finish(_ id: Int64) { state.withLock { $0.finish(id) } }
    package var isEmpty: Bool { state.withLock { $0.flying.isEmpty } }
}
