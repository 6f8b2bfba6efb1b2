import Synchronization
import TestSupport
import Testing

/// The one wait of the tests (`Tests/TestSupport/Eventually.swift`): what other suites rely on when they wait.
@Suite struct EventuallyTests {
    @Test func aConditionThatComesEndsTheWaitAndOneThatNeverDoesFailsAtTheCallerNamingIt() async {
        let looks = Atomic<Int>(0)
        #expect(await eventually("the third look") { looks.add(1, ordering: .relaxed).newValue >= 3 })
        #expect(looks.load(ordering: .relaxed) == 3)

        let line = #_sourceLocation.line + 2
        await withKnownIssue {
            let held = await eventually("a condition that never holds", within: .milliseconds(50)) { false }
            #expect(!held)
        } matching: { issue in
            issue.sourceLocation?.line == line
                && issue.comments.contains { $0.rawValue.contains("a condition that never holds") }
        }
        // Quiet: only false, for a caller that reports the failure itself.
        let held = await eventually(within: .milliseconds(20), recordsIssue: false) { false }
        #expect(!held)
    }

    @Test func theBlockingTwinKeepsTheSameRule() {
        let looks = Atomic<Int>(0)
        #expect(eventuallyBlocking("the third look") { looks.add(1, ordering: .relaxed).newValue >= 3 })
        withKnownIssue {
            eventuallyBlocking("a condition that never holds", within: .milliseconds(50)) { false }
        } matching: { issue in
            issue.comments.contains {
                $0.rawValue.contains("timed out after") && $0.rawValue.contains("a condition that never holds")
            }
        }
    }
}
