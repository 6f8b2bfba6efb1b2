import Synchronization
import Testing
import Threads

/// `Striped` keeps one copy of a value per thread stripe: a thread always finds its own copy, no update is lost
/// when many threads work at once, and `withEach` reaches every copy.
@Suite struct StripedTests {
    @Test func aThreadAlwaysWorksOnItsOwnStripe() {
        let striped = Striped<[Int]>(count: 8) { [] }
        let threads = (0..<12).compactMap { t in
            OSThread.start(name: "iapgw-test") {
                for i in 0..<100 { striped.withOwn { $0.append(t * 1_000 + i) } }
            }
        }
        #expect(threads.count == 12)
        for thread in threads { thread.join() }

        // Each thread's hundred values are in one stripe, in the order it added them.
        var stripesOfThread: [Int: Set<Int>] = [:]
        var all: [Int] = []
        var index = 0
        striped.withEach { values in
            for v in values { stripesOfThread[v / 1_000, default: []].insert(index) }
            all += values
            index += 1
        }
        #expect(index == 8)
        #expect(all.count == 1_200)
        #expect(stripesOfThread.count == 12)
        #expect(stripesOfThread.values.allSatisfy { $0.count == 1 })
        for t in 0..<12 {
            #expect(all.filter { $0 / 1_000 == t } == (0..<100).map { t * 1_000 + $0 })
        }
    }

    @Test func noUpdateIsLostUnderContention() {
        let striped = Striped<Int>(count: 4) { 0 }
        let threads = (0..<32).compactMap { _ in
            OSThread.start(name: "iapgw-test") { for _ in 0..<2_000 { striped.withOwn { $0 += 1 } } }
        }
        #expect(threads.count == 32)
        for thread in threads { thread.join() }
        var total = 0
        striped.withEach { total += $0 }
        #expect(total == 64_000)
    }

    @Test func oneStripeAtLeast() {
        let striped = Striped<Int>(count: 0) { 7 }
        #expect(striped.withOwn { $0 } == 7)
    }
}
