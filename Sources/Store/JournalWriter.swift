import Dispatch
import Synchronization
internal import Threads

/// A database ``JournalWriter`` commits batches to: one connection of its own, one transaction per batch.
protocol GroupCommitDatabase: Sendable {
    associatedtype Connection: SavepointConnection
    /// Runs `opening` (parameterless SQL), if any, then `body` in one write transaction and returns once it
    /// committed; throws when it did not (the body's error or the commit's: then nothing of it is stored, or — a
    /// connection lost during COMMIT — that is unknown). A server database sends `opening` with its `BEGIN`, in one
    /// round trip.
    func commitBatch(opening: String?, _ body: (Connection) throws -> Void) throws
    /// Whether a piece of work that threw `error` lost a race with another writer of the database (a deadlock
    /// between two instances' batches): it is then run again in the next batch, once this batch's locks are gone.
    func isTransient(_ error: any Error) -> Bool
}

extension GroupCommitDatabase {
    /// One writer of the database (SQLite): nothing to lose a race to.
    func isTransient(_ error: any Error) -> Bool { false }
}

/// A connection that runs parameterless SQL: `SAVEPOINT`, `RELEASE`, `ROLLBACK TO` (the same words in SQLite and
/// PostgreSQL).
protocol SavepointConnection {
    func execute(_ sql: String) throws
}

/// A piece of a batch run without savepoints threw: the batch is rolled back and run again in savepoints.
private struct PieceFailed: Error {}

/// Why a write failed in the writer rather than in its own work: the store is closing, or the batch's commit failed.
struct StoreFailure: Error, CustomStringConvertible {
    var description: String
}

/// The single writer of the store, with group commit: work submitted from many threads is applied in batches,
/// one transaction (and so one fsync, with SQLite's `synchronous=FULL` or PostgreSQL's `synchronous_commit`) per
/// batch, each piece of work inside its own savepoint so one failure does not undo the others. Callers block until
/// their batch is durable — which is exactly what "journal before answering" needs — or `await` it from async code.
/// A batch whose commit fails fails every piece of work in it: nothing of it is acknowledged.
final class JournalWriter<Database: GroupCommitDatabase>: Sendable {
    typealias Connection = Database.Connection

    private final class Job: Sendable {
        let work: @Sendable (Connection) throws -> Void
        /// Called on the writer thread once the batch is durable (nil) or failed.
        let completion: @Sendable ((any Error)?) -> Void
        /// About how many bytes the work writes (its body), for the batch's byte budget.
        let bytes: Int
        /// Batches it was undone in by a transient failure (``GroupCommitDatabase/isTransient(_:)``).
        let retries: Int
        init(
            _ work: @escaping @Sendable (Connection) throws -> Void,
            bytes: Int,
            retries: Int = 0,
            completion: @escaping @Sendable ((any Error)?) -> Void
        ) {
            (self.work, self.bytes, self.retries, self.completion) = (work, max(0, bytes), retries, completion)
        }

        /// The same work, for the next batch.
        var again: Job { Job(work, bytes: bytes, retries: retries + 1, completion: completion) }
    }

    /// Most batches a piece of work is run in again when it keeps failing transiently; then its error is its answer.
    static var maxRetries: Int { 8 }

    private struct State {
        var queue: [Job] = []
        /// Whether a batch is being run (its work or its COMMIT).
        var running = false
        var stopping = false
        var stopped = false
        var batches = 0
        var committed = 0
        var retried = 0
        var rerunInSavepoints = 0
    }

    private let db: Database
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Most work items per transaction.
    public let maxBatch: Int
    /// Most body bytes per transaction (a batch always takes at least one item). Every page a transaction writes
    /// lands in the write-ahead log before a checkpoint can copy it, so this bounds how far a burst of large bodies
    /// (64 connections each posting 1 MiB) can grow the log.
    public let maxBatchBytes: Int

    /// ``maxBatchBytes`` unless told otherwise.
    public static var defaultMaxBatchBytes: Int { 8 * 1_048_576 }

    public init(db: Database, maxBatch: Int = 256, maxBatchBytes: Int = defaultMaxBatchBytes) {
        self.db = db
        self.maxBatch = max(1, maxBatch)
        self.maxBatchBytes = maxBatchBytes
        // A dedicated thread: the commit's fsync (or round trip) must not block Swift's cooperative pool, and the loop
        // must not wait for a Dispatch thread that its own blocked callers hold (a deadlock seen with many stores open
        // in one process).
        if !OSThread.detach(name: ThreadName.writer, { [self] in loop() }) {
            DispatchQueue(label: "iap-gateway.journal-writer").async { [self] in loop() }
        }
    }

    /// Runs `work` in the next batch and returns once that batch is committed (or throws its error, or
    /// `StoreFailure` when the commit itself failed). Blocking: for server threads. `bytes`: about how much the work
    /// writes, when that is a body (see ``maxBatchBytes``).
    @discardableResult
    public func perform<T: Sendable>(bytes: Int = 0, _ work: @escaping @Sendable (Connection) throws -> T) throws -> T {
        let result = Mutex<T?>(nil)
        let failure = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        try enqueue(
            Job(
                { c in
                    let value = try work(c)
                    result.withLock { $0 = value }
                },
                bytes: bytes,
                completion: { error in
                    failure.withLock { $0 = error }
                    done.signal()
                }
            )
        )
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        guard let value = result.withLock({ $0 }) else { throw StoreFailure(description: "work produced no result") }
        return value
    }

    /// The same for async callers: suspends without holding any thread; the writer resumes it after the commit.
    @discardableResult
    public func performAsync<T: Sendable>(_ work: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let result = ResultBox<T>()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            do {
                try enqueue(
                    Job(
                        { c in result.set(try work(c)) },
                        bytes: 0,
                        completion: { error in
                            if let error {
                                continuation.resume(throwing: error)
                            } else if let value = result.get() {
                                continuation.resume(returning: value)
                            } else {
                                continuation.resume(throwing: StoreFailure(description: "work produced no result"))
                            }
                        }
                    )
                )
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    private final class ResultBox<T: Sendable>: Sendable {
        private let value = Mutex<T?>(nil)
        func set(_ v: T) { value.withLock { $0 = v } }
        func get() -> T? { value.withLock { $0 } }
    }

    private func enqueue(_ job: Job) throws {
        let accepted = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.queue.append(job)
            return true
        }
        guard accepted else { throw StoreFailure(description: "the store is shutting down") }
        wake.signal()
    }

    /// Commits what is queued, refuses new work, and stops the writer thread.
    public func stop() {
        let alreadyStopping = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.stopping
        }
        guard !alreadyStopping else { return }
        wake.signal()
        finished.wait()
    }

    /// Whether ``stop()`` has been called: no more work is accepted.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// (transactions committed, work items committed) since start.
    public var statistics: (batches: Int, items: Int) { state.withLock { ($0.batches, $0.committed) } }

    /// Work items run again in a later batch after a transient failure, since start.
    var retried: Int { state.withLock { $0.retried } }

    /// Batches tried without savepoints that a throwing piece sent back to be run in savepoints, since start.
    var rerunInSavepoints: Int { state.withLock { $0.rerunInSavepoints } }

    /// Work items waiting for the next batch.
    var queued: Int { state.withLock { $0.queue.count } }

    /// Work a new item would wait behind: the items queued, plus one for a batch being run. Zero: it starts at once.
    var backlog: Int { state.withLock { $0.queue.count + ($0.running ? 1 : 0) } }

    private func loop() {
        while true {
            wake.wait()
            while true {
                let (batch, stopping) = state.withLock { s -> ([Job], Bool) in
                    var n = 0
                    var bytes = 0
                    while n < min(s.queue.count, maxBatch), n == 0 || bytes + s.queue[n].bytes <= maxBatchBytes {
                        bytes += s.queue[n].bytes
                        n += 1
                    }
                    let taken = Array(s.queue.prefix(n))
                    s.queue.removeFirst(n)
                    s.running = n > 0
                    return (taken, s.stopping)
                }
                if batch.isEmpty {
                    if stopping {
                        state.withLock { $0.stopped = true }
                        finished.signal()
                        return
                    }
                    break
                }
                run(batch)
            }
        }
    }

    /// What a batch came to: what the statistics record, and each caller's answer.
    private struct Settled {
        /// Whether the transaction committed.
        var committed: Bool
        /// Pieces whose work is stored.
        var stored = 0
        /// Pieces to run again, first in the next batch (a transient failure).
        var again: [Job] = []
        var answers: [(job: Job, error: (any Error)?)]

        /// The transaction did not commit: nothing in the batch is durable, whatever its work returned.
        static func commitFailed(_ batch: [Job], _ error: any Error) -> Settled {
            let failure = StoreFailure(description: "commit failed: \(error)")
            return Settled(committed: false, answers: batch.map { ($0, failure) })
        }
    }

    /// A batch is first run as one plain transaction (a batch of one as well), since pieces rarely fail (a duplicate
    /// is an answer, not an error) and savepoints are not free: each savepoint statement is a round trip to a server
    /// and a subtransaction there, and SQLite copies every page a piece changes into its statement journal, a file
    /// once it passes 64 KiB — more bytes written than the log itself. Only when a piece throws is the batch rolled
    /// back whole and run again, piece by piece in savepoints (below). Every piece of work
    /// may run more than once — a transient failure runs it again in the next batch already — so it must do nothing
    /// outside the transaction it is given.
    ///
    /// The writer is marked free before its callers learn their outcome: a caller that writes again at once must not
    /// find it still busy with the batch that answered it (``backlog``), and wait behind it while another writer is
    /// idle.
    private func run(_ batch: [Job]) {
        let settled = runWithoutSavepoints(batch) ?? runInSavepoints(batch)
        state.withLock { s in
            if settled.committed { s.batches += 1 }
            s.committed += settled.stored
            s.retried += settled.again.count
            s.queue.insert(contentsOf: settled.again, at: 0)
            s.running = false
        }
        for (job, error) in settled.answers { job.completion(error) }
    }

    /// The batch in one transaction, no savepoints: one round trip fewer per piece after the first. Nil when a piece
    /// threw: nothing of the batch is stored then, and it is to be run in savepoints.
    private func runWithoutSavepoints(_ batch: [Job]) -> Settled? {
        do {
            try db.commitBatch(opening: nil) { c in
                for job in batch {
                    do { try job.work(c) } catch { throw PieceFailed() }
                }
            }
        } catch is PieceFailed {
            state.withLock { $0.rerunInSavepoints += 1 }
            return nil
        } catch {
            return .commitFailed(batch, error)
        }
        return Settled(committed: true, stored: batch.count, answers: batch.map { ($0, nil) })
    }

    /// Each piece of work runs inside the savepoint `item`, opened with the batch's `BEGIN`. After a success the next
    /// piece releases it and opens a new one in a single statement; after a failure `ROLLBACK TO item` undoes the
    /// work and keeps the savepoint open for the next; the last one is released by the `COMMIT`.
    private func runInSavepoints(_ batch: [Job]) -> Settled {
        var failures = [(any Error)?](repeating: nil, count: batch.count)
        var retried = [Bool](repeating: false, count: batch.count)
        do {
            try db.commitBatch(opening: "SAVEPOINT item") { c in
                var keep = false  // whether the open savepoint holds the previous piece's work
                for (i, job) in batch.enumerated() {
                    if keep { try c.execute("RELEASE item; SAVEPOINT item") }
                    do {
                        try job.work(c)
                        keep = true
                    } catch {
                        // Undoes the work and frees what it locked: another instance's batch waiting for it goes on.
                        try c.execute("ROLLBACK TO item")
                        keep = false
                        if job.retries < Self.maxRetries && db.isTransient(error) {
                            retried[i] = true
                        } else {
                            failures[i] = error
                        }
                    }
                }
            }
        } catch {
            return .commitFailed(batch, error)
        }
        let again = batch.indices.filter { retried[$0] }.map { batch[$0].again }
        let answers = batch.indices.filter { !retried[$0] }.map { (batch[$0], failures[$0]) }
        return Settled(committed: true, stored: batch.count - again.count, again: again, answers: answers)
    }
}
