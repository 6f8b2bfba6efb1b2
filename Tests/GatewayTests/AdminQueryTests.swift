import Store
import Synchronization
import Testing

@testable import Gateway

/// The admin API's query parameters, parsed without a server.
@Suite struct AdminQueryTests {
    static let now: Int64 = 1_748_736_000_000

    /// `limit` is 100 when absent and otherwise an integer in the endpoint's range: anything else is a `bad_request`,
    /// never a value clamped or defaulted in silence (Schemathesis found `limit=1e100` and `limit=10001` answered 200
    /// with another limit than the one asked; docs/contracts.md).
    @Test(
        arguments: [
            (nil, 100), ("1", 1), ("250", 250), ("10000", 10_000), ("+7", 7),
            ("", nil), ("ten", nil), ("1e100", nil), ("2.5", nil), (" 5", nil), ("0", nil), ("-5", nil), ("10001", nil),
            ("99999999999999999999", nil), ("9223372036854775807", nil),
        ] as [(String?, Int?)]
    )
    func limitIsAnIntegerInItsRangeOrRefused(_ text: String?, _ expected: Int?) throws {
        let query = AdminQuery(text.map { ["limit": $0] } ?? [:])
        guard let expected else {
            #expect(throws: GatewayError(.badRequest, "")) { try query.limit(maximum: 10_000) }
            return
        }
        #expect(try query.limit(maximum: 10_000) == expected)
    }

    @Test func replaySelectsByIDThenDeadLettersThenTime() throws {
        let reads = Mutex(0)
        let clock = { () -> Int64 in
            reads.withLock { $0 += 1 }
            return Self.now
        }
        #expect(
            try AdminQuery(["id": "e1", "dead_letters": ""]).replaySelection(now: clock) == .eventID("e1")
        )
        #expect(try AdminQuery(["dead_letters": "1"]).replaySelection(now: clock) == .deadLetters)
        #expect(reads.withLock { $0 } == 0)  // the clock is read only for a time
        #expect(
            try AdminQuery(["id": "e1", "since": "7d"]).replaySelection(now: clock) == .eventID("e1")
        )
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
            // A parameter the selection would leave unused is still checked: a malformed one is a mistake.
            (["dead_letters": "", "until": ""], "until is not a time (ISO-8601, 7d, 12h or epoch ms)"),
            (["id": "e1", "since": "bogus"], "since is not a time (ISO-8601, 7d, 12h or epoch ms)"),
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

    @Test func theReportLooksBackItsWindowUnlessGivenATime() throws {
        #expect(try AdminQuery([:]).reportSince(now: Self.now, window: 1_000) == Self.now - 1_000)
        #expect(throws: GatewayError(.badRequest, "")) {
            try AdminQuery(["since": "not a time"]).reportSince(now: Self.now, window: 1_000)
        }
        #expect(try AdminQuery(["since": "1h"]).reportSince(now: Self.now, window: 1_000) == Self.now - 3_600_000)
    }
}
