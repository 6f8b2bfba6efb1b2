import Store
import Testing

@testable import ServiceKit

/// The guard against starting a job twice: a poll's rows may predate the commit of a job that finished meanwhile.
@Suite struct InFlightSetTests {
    @Test func aJobFinishingDuringAReadIsNotPickedFromThatRead() {
        let set = InFlightSet()
        set.beginRead()
        set.claim { $0.claim(1) }
        // Poll N+1 starts reading while job 1 is in flight; job 1 commits and finishes before the rows come back.
        set.beginRead()
        set.finish(1)
        let picked = set.claim { claims in [1, 2].filter { !claims.isBusy($0) } }
        #expect(picked == [2])
        #expect(set.isEmpty)
        // The next read began after the commit, so its rows no longer show job 1 as due: nothing is held back.
        set.beginRead()
        #expect(set.claim { $0.isBusy(1) } == false)
    }

    @Test func claimsCountOnlyJobsInFlight() {
        let set = InFlightSet()
        set.beginRead()
        set.claim {
            $0.claim(7)
            $0.claim(8)
        }
        set.finish(7)
        #expect(set.claim { $0.count } == 1)
        #expect(!set.isEmpty)
    }

    @Test func lanesCountTheirOwnJobsOnly() {
        let set = InFlightSet()
        set.beginRead()
        set.claim {
            $0.claim(1, lane: "a")
            $0.claim(2, lane: "a")
            $0.claim(3, lane: "b")
        }
        #expect(
            set.claim { [$0.count(lane: "a"), $0.count(lane: "b"), $0.count(lane: "c"), $0.count] } == [2, 1, 0, 3]
        )
        set.finish(1)
        #expect(set.claim { $0.count(lane: "a") } == 1)
    }
}
