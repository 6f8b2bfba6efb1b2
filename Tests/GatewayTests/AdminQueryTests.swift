import Store
import Synchronization
import Testing

@testable import Gateway

/// The admin API's query parameters, parsed without a server.
@Suite struct AdminQueryTests {
    static let now: Int64 = 1_748_736_000_000

    @Test(
        arguments: [
            (nil, 100), ("", 100), ("ten", 100), ("99999999999999999999", 100),  // absent or not a number: the default
            ("0", 1), ("-5", 1), ("1", 1), ("250", 250), ("10000", 10_000), ("10001", 10_000),
            ("9223372036854775807", 10_000),
        ] as [(String?, Int)]
    )
    func limitDefaultsAndClamps(_ text: String?, _ expected: Int) {
        #expect(AdminQuery(text.map { ["limit": $0] } ?? [:]).limit == expected)
    }

    @Test func replaySelectsByIDThenDeadLettersThenTime() throws {
        let reads = Mutex(0)
        let clock = { () -> Int64 in
            reads.withLock { $0 += 1 }
            return Self.now
        }
        #expect(
            try AdminQuery(["id": "e1", "dead_letters": "", "since": "bogus"]).replaySelection(now: clock)
                == .eventID("e1")
        )
        #expect(try AdminQuery(["dead_letters": "1", "since": "bogus"]).replaySelection(now: clock) == .deadLetters)
        #expect(reads.withLock { $0 } == 0)  // the clock is read only for a time
        #expect(
            try AdminQuery(["since": "7d"]).replaySelection(now: clock)
                == .range(since: Self.now - 7 * 86_400_000, until: .max)
        )
        #expect(
            try AdminQuery(["since": "12h", "until": "1750000000000"]).replaySelection(now: clock)
                == .range(since: Self.now - 12 * 3_600_000, until: 1_750_000_000_000)
        )
        #expect(
            try AdminQuery(["since": "2025-06-01T00:00:00Z"]).replaySelection(now: clock)
                == .range(since: Self.now, until: .max)
        )
    }

    @Test(
        arguments: [
            ([:], "give id, since[/until] or dead_letters"),
            (["since": "yesterday"], "since is not a time (ISO-8601, 7d, 12h or epoch ms)"),
            (["since": "999999999999999d"], "since is not a time (ISO-8601, 7d, 12h or epoch ms)"),
            (["since": "7d", "until": "soon"], "until is not a time (ISO-8601, 7d, 12h or epoch ms)"),
        ] as [([String: String], String)]
    )
    func aBadReplayIsABadRequest(_ parameters: [String: String], _ message: String) {
        #expect {
            try AdminQuery(parameters).replaySelection { Self.now }
        } throws: { error in
            (error as? GatewayError)?.code == .badRequest && (error as? GatewayError)?.reason == message
        }
    }

    @Test func lanesAndQuarantineSelections() throws {
        #expect(try AdminQuery([:]).lane() == nil)
        #expect(try AdminQuery(["lane": "genuine"]).lane() == .genuine)
        #expect(throws: GatewayError(.badRequest, "")) { try AdminQuery(["lane": "GENUINE"]).lane() }

        let all = try AdminQuery([:]).quarantineSelection()
        #expect(all.lane == nil && all.id == nil && all.limit == Operations.QuarantineSelection().limit)
        let one = try AdminQuery(["lane": "untrusted", "id": "42"]).quarantineSelection()
        #expect(one.lane == .untrusted && one.id == 42)
        #expect {
            try AdminQuery(["id": "forty-two"]).quarantineSelection()
        } throws: { ($0 as? GatewayError)?.reason == "id is a row id" }
        // The lane is checked first.
        #expect {
            try AdminQuery(["lane": "x", "id": "forty-two"]).quarantineSelection()
        } throws: { ($0 as? GatewayError)?.reason == "lane is untrusted or genuine" }
    }

    @Test func theReportLooksBackItsWindowUnlessGivenATime() {
        #expect(AdminQuery([:]).reportSince(now: Self.now, window: 1_000) == Self.now - 1_000)
        #expect(AdminQuery(["since": "not a time"]).reportSince(now: Self.now, window: 1_000) == Self.now - 1_000)
        #expect(AdminQuery(["since": "1h"]).reportSince(now: Self.now, window: 1_000) == Self.now - 3_600_000)
    }
}
