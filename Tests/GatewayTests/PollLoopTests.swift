import Foundation
@testable import Gateway
import Synchronization
import Store
import Testing

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
                work: { _ in ran.add(1, ordering: .relaxed) }, inFlight: { false }, everySecond: {})
        }
        // Warm up (allocator, runtime), then measure the growth over the bulk of the jobs.
        while ran.load(ordering: .relaxed) < 20_000 { try await Task.sleep(for: .milliseconds(5)) }
        let before = Self.residentKiB()
        while ran.load(ordering: .relaxed) < total { try await Task.sleep(for: .milliseconds(5)) }
        let grown = Self.residentKiB() - before
        loop.stop()
        _ = await task.result
        // A plain task group kept every finished child task: ~50 MB here. Discarded, growth is allocator noise.
        #expect(grown < 10_000, "resident memory grew by \(grown) KiB over \(total - 20_000) finished jobs")
    }
}
