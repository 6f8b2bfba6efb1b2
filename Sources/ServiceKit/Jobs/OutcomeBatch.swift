package import Store
import Synchronization

/// The outcomes of a scheduler's finished jobs, waiting to be committed in the same write as its next claim
/// (docs/architecture.md, "Job outcomes ride with the next claim"). A job's outcome and the claim of the job that
/// takes its slot were two transactions, one after the other — on PostgreSQL two commits, each waiting for the
/// disk, per delivery — and are now one. A job still returns only once its outcome is committed.
package final class OutcomeBatch: Sendable {
    package typealias Work = @Sendable (any StoreTransaction) throws -> Void

    package struct Entry: Sendable {
        package let id: Int64
        package let lane: String
        package let work: Work
        package let done: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var entries: [Entry] = []
        var open = true
    }

    private let state = Mutex(State())
    /// Wakes the scheduler's loop: an outcome waits for its write.
    private let ring: @Sendable () -> Void

    package init(ring: @escaping @Sendable () -> Void) { self.ring = ring }

    /// Queues `work` — the outcome of job `id` of `lane` — for the scheduler's next write and returns once that write
    /// committed (true), or throws its error. False at once when the batch is closed (the scheduler stopped): the
    /// caller writes the outcome itself.
    package func commit(id: Int64, lane: String, _ work: @escaping Work) async throws -> Bool {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Bool, any Error>) in
            let queued = state.withLock { s -> Bool in
                guard s.open else { return false }
                s.entries.append(Entry(id: id, lane: lane, work: work, done: done))
                return true
            }
            if queued { ring() } else { done.resume(returning: false) }
        }
    }

    /// The outcomes queued so far, for the write the caller is about to make; the caller resumes each.
    package func take() -> [Entry] {
        state.withLock { s in
            defer { s.entries.removeAll() }
            return s.entries
        }
    }

    /// Refuses further outcomes (their jobs write them themselves) and returns those still queued.
    package func close() -> [Entry] {
        state.withLock { s in
            s.open = false
            defer { s.entries.removeAll() }
            return s.entries
        }
    }

    /// Commits `entries` with `then` in one write, or reports the write's error to each of them.
    package static func write<T: Sendable>(
        _ entries: [Entry],
        store: any GatewayStore,
        then: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        let works = entries.map(\.work)
        do {
            let value = try await store.write { tx in
                for work in works { try work(tx) }
                return try then(tx)
            }
            return value
        } catch {
            for entry in entries { entry.done.resume(throwing: error) }
            throw error
        }
    }
}

/// The job a scheduler's child task is running, and the batch its outcome may join (``WorkerContext/recordOutcome(_:)``).
package final class JobSettlement: Sendable {
    @TaskLocal package static var current: JobSettlement?

    package let batch: OutcomeBatch
    package let id: Int64
    package let lane: String
    private let joined = Atomic<Bool>(false)

    package init(batch: OutcomeBatch, id: Int64, lane: String) { (self.batch, self.id, self.lane) = (batch, id, lane) }

    /// Commits `work` with the scheduler's next claim; false when the scheduler no longer takes outcomes.
    package func commit(_ work: @escaping OutcomeBatch.Work) async throws -> Bool {
        guard try await batch.commit(id: id, lane: lane, work) else { return false }
        joined.store(true, ordering: .relaxed)
        return true
    }

    /// Whether the job's outcome was committed with a claim, which then filled its slot already.
    package var joinedClaim: Bool { joined.load(ordering: .relaxed) }
}
