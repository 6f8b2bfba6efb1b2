import Synchronization
import Testing
import Threads

#if canImport(Glibc)
import Glibc
#endif

/// The one bridge between blocking and async code: blocking work awaited from a task, async work waited for from a
/// thread of its own, each returning what the other side produced and cancelling nothing.
@Suite struct BlockingTests {
    struct Refusal: Error, Equatable { var code: Int }

    @Test func blockingWorkReturnsItsValueOrItsError() async throws {
        #expect(try await Blocking.run { 6 * 7 } == 42)
        await #expect(throws: Refusal(code: 3)) {
            try await Blocking.run { () throws -> Int in throw Refusal(code: 3) }
        }
    }

    @Test func blockingWorkRunsToItsEndWhenItsTaskIsCancelled() async throws {
        let finished = Atomic<Bool>(false)
        let task = Task {
            try await Blocking.run {
                // Blocks its thread (not the pool's) until the task was cancelled.
                while !finished.load(ordering: .relaxed) { usleepBriefly() }
                return "done"
            }
        }
        task.cancel()
        finished.store(true, ordering: .relaxed)
        #expect(try await task.value == "done")
    }

    @Test func aThreadOfItsOwnWaitsForAsyncWorkAndGetsItsValue() {
        let seen = Mutex<[String]>([])
        let thread = OSThread.start(name: "iapgw-test") {
            let value = Blocking.wait {
                try? await Task.sleep(for: .milliseconds(20))
                seen.withLock { $0.append("work") }
                return 7
            }
            seen.withLock { $0.append("returned \(value)") }
        }
        thread?.join()
        #expect(thread != nil)
        #expect(seen.withLock { $0 } == ["work", "returned 7"], "the thread waited for the work to finish")
    }

    @Test func manyThreadsWaitingAtOnceEachGetTheirOwnValue() {
        let results = Mutex<[Int: Int]>([:])
        let threads = (0..<8).compactMap { i in
            OSThread.start(name: "iapgw-test") {
                let value = Blocking.wait {
                    await Task.yield()
                    return i * i
                }
                results.withLock { $0[i] = value }
            }
        }
        for thread in threads { thread.join() }
        #expect(threads.count == 8)
        #expect(results.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, $0 * $0) }))
    }
}

/// A short pause of the calling (blocking) thread.
private func usleepBriefly() {
    var request = timespec(tv_sec: 0, tv_nsec: 1_000_000)
    _ = nanosleep(&request, nil)
}
