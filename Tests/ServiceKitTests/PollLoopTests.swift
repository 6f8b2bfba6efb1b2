import Foundation
import Store
import Synchronization
import TestSupport
import Testing

@testable import ServiceKit

/// The workers' loop runs for the life of the service: what it ran must not stay in memory.
@Suite struct PollLoopTests {
    /// Resident memory of this process in KiB (VmRSS).
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func finishedJobsAreNotKeptWhileTheLoopRuns() async throws {
        let loop = PollLoop(idlePollMillis: 1)
        let ran = Atomic<Int>(0)
        let batches = Atomic<Int>(0)
        let total = 200_000
        let task = Task {
            await loop.run(
                fetch: { batches.add(1, ordering: .relaxed).newValue <= total / 2_000 ? Array(0..<2_000) : [] },
                work: { _ in ran.add(1, ordering: .relaxed) },
                inFlight: { false },
                everySecond: {}
            )
        }
        // Warm up (allocator, runtime), then measure the growth over the bulk of the jobs.
        await eventually("the warm-up's 20 000 jobs run") { ran.load(ordering: .relaxed) >= 20_000 }
        let before = Self.residentKiB()
        await eventually("all \(total) jobs run") { ran.load(ordering: .relaxed) >= total }
        let grown = Self.residentKiB() - before
        loop.stop()
        _ = await task.result
        // A plain task group kept every finished child task: ~50 MB here. Discarded, growth is allocator noise.
        #expect(grown < 10_000, "resident memory grew by \(grown) KiB over \(total - 20_000) finished jobs")
    }

    /// A finished job (or anything calling `wake()`) ends the loop's wait: with an idle poll of an hour, only the
    /// wake can bring the second fetch.
    @Test func aWakeEndsTheWaitAtOnce() async throws {
        final class Fetches: Sendable { let count = Atomic<Int>(0) }
        let loop = PollLoop(idlePollMillis: 3_600_000)
        let fetches = Fetches()
        let task = Task {
            await loop.run(
                fetch: {
                    fetches.count.add(1, ordering: .relaxed)
                    return [Int]()
                },
                work: { _ in },
                inFlight: { false },
                everySecond: {}
            )
        }
        for (n, wake) in [(1, false), (2, true), (3, true)] {
            // The third wake comes while the loop may not be waiting yet: it is kept for its next wait.
            if wake { loop.wake() }
            await eventually("fetch \(n)") { fetches.count.load(ordering: .relaxed) >= n }
        }
        loop.stop()  // also ends the wait
        _ = await task.result
    }

    @Test func aDoorbellRungBeforeTheSleepEndsItAndAnUnrungOneWaitsItsTime() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        bell.ring()
        var start = clock.now
        await bell.sleep(for: .seconds(3_600))
        #expect(clock.now - start < .seconds(60))
        start = clock.now
        await bell.sleep(for: .milliseconds(50))
        #expect(clock.now - start >= .milliseconds(50))
    }
}
