import Canonical
import Foundation
import Policy
import Synchronization
import Testing
import WireJSON

@testable import Gateway

/// `downstreams[].filter`, `v2_passthrough` and `max_per_second` read from the config (docs/configuration.md), and
/// the token bucket behind `max_per_second`.
@Suite struct DownstreamFilterTests {
    static func parse(_ downstream: String) throws(ConfigError) -> GatewayConfig {
        try GatewayConfig.parse(Array(#"{"downstreams": [\#(downstream)]}"#.utf8), baseDirectory: "/")
    }

    static func field(_ downstream: String) -> String? {
        do {
            _ = try parse(downstream)
            return nil
        } catch { return error.field }
    }

    @Test func everyFilterFieldIsRead() throws {
        let c = try Self.parse(
            """
            {"name": "d", "url": "http://x", "shadow": true, "max_per_second": 50,
             "filter": {"kinds": ["refund", "revocation"], "types": ["REFUND", "DID_RENEW/BILLING_RECOVERY"],
                        "bundles": ["com.example.a"], "authoritative": false}}
            """
        )
        let d = try #require(c.downstreams.first)
        #expect(d.filter.kinds == [.refund, .revocation])
        #expect(d.filter.types == ["REFUND", "DID_RENEW/BILLING_RECOVERY"])
        #expect(d.filter.bundles == ["com.example.a"] && d.filter.authoritative == false)
        #expect(d.maxPerSecond == 50)
        let plain = try #require(try Self.parse(#"{"name": "d", "url": "http://x"}"#).downstreams.first)
        #expect(plain.filter.takesEverything && plain.maxPerSecond == nil)
    }

    @Test func aV2PassthroughDownstreamIsAKind() throws {
        let d = try #require(
            try Self.parse(#"{"name": "raw", "kind": "v2_passthrough", "url": "http://x"}"#).downstreams.first
        )
        #expect(d.kind == .v2Passthrough && d.kind.takesBodies && !d.kind.takesEvents)
    }

    @Test(arguments: [
        (#"{"name": "d", "url": "http://x", "filter": {"kinds": ["refunded"]}}"#, "downstreams[0].filter.kinds[0]"),
        (#"{"name": "d", "url": "http://x", "filter": {"types": ["did_renew"]}}"#, "downstreams[0].filter.types[0]"),
        (#"{"name": "d", "url": "http://x", "filter": {"types": ["A/B/C"]}}"#, "downstreams[0].filter.types[0]"),
        (#"{"name": "d", "url": "http://x", "filter": {"types": ["DID_RENEW/"]}}"#, "downstreams[0].filter.types[0]"),
        (
            #"{"name": "d", "url": "http://x", "filter": {"authoritative": "yes"}}"#,
            "downstreams[0].filter.authoritative"
        ),
        (#"{"name": "d", "url": "http://x", "filter": {"kind": ["refund"]}}"#, "downstreams[0].filter.kind"),
        (#"{"name": "d", "url": "http://x", "filter": {}}"#, "downstreams[0].filter"),
        (#"{"name": "d", "url": "http://x", "filter": []}"#, "downstreams[0].filter"),
        (
            #"{"name": "d", "kind": "v1_passthrough", "url": "http://x", "filter": {"kinds": ["refund"]}}"#,
            "downstreams[0].filter"
        ),
        (#"{"name": "d", "url": "http://x", "max_per_second": 0}"#, "downstreams[0].max_per_second"),
        (#"{"name": "d", "url": "http://x", "max_per_second": 100001}"#, "downstreams[0].max_per_second"),
        (#"{"name": "d", "kind": "v3_passthrough", "url": "http://x"}"#, "downstreams[0].kind"),
    ])
    func invalidSettingsNameTheField(_ downstream: String, _ field: String) {
        #expect(Self.field(downstream) == field)
    }

    @Test func statusShowsEachDownstreamsFilter() throws {
        let c = try Self.parse(
            """
            {"name": "d", "url": "http://x", "max_per_second": 5, "filter": {"kinds": ["refund"]}},
            {"name": "e", "url": "http://y"}
            """
        )
        let shown = c.downstreams.map { String(decoding: Operations.status(of: $0).canonicalBytes(), as: UTF8.self) }
        #expect(shown[0].contains(#""filter":{"authoritative":null,"bundles":[],"kinds":["refund"],"types":[]}"#))
        #expect(shown[0].contains(#""max_per_second":5"#))
        #expect(shown[1].contains(#""filter":null"#) && shown[1].contains(#""max_per_second":null"#))
    }

    /// A clock the bucket's waits move forward: each sleep advances it by exactly what was asked.
    final class Clock: Sendable {
        let millis = Mutex<Int64>(0)
        let slept = Mutex<[Int64]>([])
        func now() -> Int64 { millis.withLock { $0 } }
        func sleep(_ ms: Int64) {
            slept.withLock { $0.append(ms) }
            millis.withLock { $0 += ms }
        }
    }

    @Test func theBucketHoldsOneSecondsWorthThenPacesToTheRate() async {
        let clock = Clock()
        let limiter = RateLimiter(limits: ["d": 50], now: clock.now, sleep: { clock.sleep($0) })
        for _ in 0..<50 { #expect(await limiter.acquire("d")) }
        #expect(clock.now() == 0, "a full bucket: one second's worth at once")
        for _ in 0..<100 { #expect(await limiter.acquire("d")) }
        // 100 more at 50/s take two seconds of the clock (one token every 20 ms).
        #expect(clock.now() == 2_000)
        #expect(clock.slept.withLock { $0.allSatisfy { $0 == 20 } })
        // A downstream without a limit never waits.
        #expect(await limiter.acquire("other"))
        #expect(clock.now() == 2_000)
    }

    @Test func aQuietSecondRefillsTheBucketButNoMore() async {
        let clock = Clock()
        let limiter = RateLimiter(limits: ["d": 10], now: clock.now, sleep: { clock.sleep($0) })
        for _ in 0..<10 { _ = await limiter.acquire("d") }
        clock.millis.withLock { $0 += 60_000 }  // an outage: a minute without deliveries
        let before = clock.now()
        for _ in 0..<20 { _ = await limiter.acquire("d") }
        // Only ten at once after the quiet minute, then paced: 10 more take a second.
        #expect(clock.now() - before == 1_000)
    }
}
