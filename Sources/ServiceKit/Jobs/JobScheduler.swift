internal import Canonical
internal import Store
import Synchronization

/// Polls a ``JobTable`` and runs its due jobs in child tasks, never one job twice at once, within each lane's limit.
package final class JobScheduler: Sendable {
    private let context: WorkerContext
    private let loop: PollLoop
    private let inFlight = InFlightSet()
    /// When the running jobs' leases were last renewed (``renewLeases(_:)``).
    private let lastRenewal = Mutex<Int64?>(nil)

    package init(context: WorkerContext, idlePollMillis: Int64) {
        self.context = context
        self.loop = PollLoop(idlePollMillis: idlePollMillis)
    }

    /// Runs until ``stop()``; returns after the jobs in flight finished.
    package func run<Table: JobTable>(_ table: Table) async {
        let outcomes = OutcomeBatch(ring: { [loop] in loop.wake() })
        await loop.run(
            fetch: { (try? await self.due(table, settling: outcomes.take())) ?? [] },
            work: { job in
                let settlement = JobSettlement(batch: outcomes, id: job.id, lane: job.lane)
                await JobSettlement.$current.withValue(settlement) { await table.process(job) }
                self.inFlight.finish(job.id)
                // A free slot: look for the next job now — unless the outcome's write claimed it already.
                if !settlement.joinedClaim { self.loop.wake() }
            },
            inFlight: { !self.inFlight.isEmpty },
            everySecond: {
                await self.renewLeases(table)
                await table.housekeeping()
            },
            stopped: { await self.flush(outcomes.close()) }
        )
    }

    /// Outcomes queued when the loop stopped: committed on their own, their jobs still waiting for them.
    private func flush(_ entries: [OutcomeBatch.Entry]) async {
        guard !entries.isEmpty, (try? await OutcomeBatch.write(entries, store: context.store, then: { _ in })) != nil
        else { return }
        for entry in entries { entry.done.resume(returning: true) }
    }

    package func stop() { loop.stop() }

    /// Where jobs are claimed in the store, the leases of the jobs this instance is still running are extended every
    /// third of a lease: a job that runs longer than its lease (a reconciliation run through a large app, a downstream
    /// given a long timeout) is never taken over by another instance while it still runs. A failed renewal is tried
    /// again at the next; what it protects against needs the lease to run out first.
    package func renewLeases<Table: JobTable>(_ table: Table) async {
        guard context.store.sharedByInstances else { return }
        let time = context.now()
        let interval = max(1, context.leaseMillis / 3)
        let due = lastRenewal.withLock { last -> Bool in
            guard let previous = last else {
                last = time  // the first look: jobs claimed from now on hold a full lease
                return false
            }
            guard time - previous >= interval else { return false }
            last = time
            return true
        }
        let ids = due ? inFlight.claim { Array($0.flying.keys) } : []
        guard !ids.isEmpty else { return }
        let lease = Lease(owner: context.instance, until: time.clampedAdding(context.leaseMillis))
        let jobs = table.claimedJobs
        _ = try? await context.store.write { tx in try tx.renewClaims(jobs, ids: ids, lease: lease) }
    }

    /// The due jobs not in flight, claimed, within their lanes' limits. A lane with no free slot is not read at all,
    /// and a lane is read for its free slots only, the jobs in flight left out (``Lease/running``): a poll while
    /// jobs run never claims them again (on PostgreSQL every claimed row is updated, every 5 ms while busy).
    ///
    /// The outcomes of finished jobs (`settling`) are written first in the same transaction, and their slots count as
    /// free: one commit settles a job and claims the next. Each outcome's job is resumed once that write committed, or
    /// with its error (its job then writes the outcome on its own, ``WorkerContext/recordOutcome(_:)``).
    package func due<Table: JobTable>(_ table: Table, settling: [OutcomeBatch.Entry] = []) async throws -> [Table.Job] {
        let time = context.now()
        inFlight.beginRead()
        let (wanted, running) = inFlight.claim { claims in
            let wanted = table.lanes.compactMap { lane -> (lane: String, free: Int)? in
                let settled = settling.reduce(0) { $0 + ($1.lane == lane && claims.isFlying($1.id) ? 1 : 0) }
                let free = table.limit(lane: lane) - claims.count(lane: lane) + settled
                return free > 0 ? (lane, free) : nil
            }
            return (wanted, claims.running)
        }
        guard !wanted.isEmpty || !settling.isEmpty else { return [] }
        let lease = Lease(owner: context.instance, until: time.clampedAdding(context.leaseMillis), running: running)
        let claim = table.store.narrow { c in
            try wanted.flatMap { try table.due(at: time, lane: $0.lane, count: $0.free, lease: lease, in: c) }
        }
        // Several instances: the jobs are claimed in the store, so that each runs on one of them. With outcomes to
        // write, one store alone reads its due jobs in that write.
        let candidates: [Table.Job]
        if !settling.isEmpty {
            candidates = try await OutcomeBatch.write(settling, store: context.store, then: claim)
        } else {
            candidates =
                context.store.sharedByInstances
                ? try await context.store.write(claim) : try await context.store.read(claim)
        }
        defer { for entry in settling { entry.done.resume(returning: true) } }
        return inFlight.claim { claims in
            for entry in settling { claims.finish(entry.id) }
            return candidates.filter { job in
                guard !claims.isBusy(job.id), claims.count(lane: job.lane) < table.limit(lane: job.lane) else {
                    return false
                }
                claims.claim(job.id, lane: job.lane)
                return true
            }
        }
    }
}
