import Canonical
import Foundation
import Policy
import ServiceKit
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
        let c = try GatewayConfig.parse(
            Array(
                """
                {"apps": [{"bundle_id": "com.example.a", "environments": ["sandbox"]}],
                 "downstreams": [{"name": "d", "url": "http://x", "shadow": true, "max_per_second": 50,
                  "filter": {"kinds": ["refund", "revocation"], "types": ["REFUND", "DID_RENEW/BILLING_RECOVERY"],
                             "bundles": ["com.example.a"], "authoritative": false}}]}
                """.utf8
            ),
            baseDirectory: "/"
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

    /// A config with these apps and one downstream `d` whose filter is `filter`.
    static func filterField(_ filter: String, apps: String = "") -> String? {
        do {
            _ = try GatewayConfig.parse(
                Array(
                    """
                    {"apps": [\(apps)],
                     "downstreams": [{"name": "other", "url": "http://y"},
                                     {"name": "d", "url": "http://x", "filter": \(filter)}]}
                    """.utf8
                ),
                baseDirectory: "/"
            )
            return nil
        } catch { return error.field }
    }

    static let twoApps = """
        {"bundle_id": "com.example.a", "environments": ["sandbox"]},
        {"bundle_id": "com.example.b", "environments": ["sandbox"], "downstreams": ["other"]}
        """

    /// A filter naming what never comes is refused at load, as an unknown kind is: the downstream would silently
    /// receive nothing.
    @Test(arguments: [
        (#"{"types": ["NOPE_TYPE"]}"#, "downstreams[1].filter.types[0]"),
        (#"{"types": ["DID_RENEW", "DID_RENEWAL"]}"#, "downstreams[1].filter.types[1]"),
        (#"{"types": ["DID_RENEW/NOPE"]}"#, "downstreams[1].filter.types[0]"),
        (#"{"types": ["NOPE/BILLING_RECOVERY"]}"#, "downstreams[1].filter.types[0]"),
        // V1's types carry no subtype.
        (#"{"types": ["INTERACTIVE_RENEWAL/UPGRADE"]}"#, "downstreams[1].filter.types[0]"),
        // A subtype is not a type.
        (#"{"types": ["BILLING_RECOVERY"]}"#, "downstreams[1].filter.types[0]"),
        (#"{"bundles": ["com.example.a", "com.example.nowhere"]}"#, "downstreams[1].filter.bundles[1]"),
        // com.example.b names its downstreams, and not this one.
        (#"{"bundles": ["com.example.b"]}"#, "downstreams[1].filter.bundles[0]"),
    ])
    func aFilterNamingWhatNeverComesIsRefused(_ filter: String, _ field: String) {
        #expect(Self.filterField(filter, apps: Self.twoApps) == field)
    }

    /// Every type and subtype Apple sends, V1's and V2's, the newest included, is taken; an app that names no
    /// downstreams sends to every one.
    @Test func everyAppleTypeAndSubtypeIsTaken() {
        let v2 = [
            "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW",
            "EXPIRED", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED",
            "REFUND_REVERSED", "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "TEST",
            "EXTERNAL_PURCHASE_TOKEN", "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION",
            "PRICE_CHANGE", "UNCLAIM_SEATS",
        ]
        let v1 = [
            "INITIAL_BUY", "DID_RECOVER", "RENEWAL", "INTERACTIVE_RENEWAL", "CANCEL", "PRICE_INCREASE_CONSENT",
        ]
        let withSubtypes = [
            "SUBSCRIBED/INITIAL_BUY", "OFFER_REDEEMED/RESUBSCRIBE", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE",
            "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/PRODUCT_NOT_FOR_SALE",
            "DID_FAIL_TO_RENEW/GRACE_PERIOD",
            "DID_RENEW/BILLING_RECOVERY", "PRICE_INCREASE/ACCEPTED", "RENEWAL_EXTENSION/SUMMARY",
            "RENEWAL_EXTENSION/FAILURE", "EXTERNAL_PURCHASE_TOKEN/UNREPORTED", "EXTERNAL_PURCHASE_TOKEN/CREATED",
            "EXTERNAL_PURCHASE_TOKEN/ACTIVE_TOKEN_REMINDER", "REFUND/SEATS", "DID_RENEW/INCREASE_QUANTITY",
            "DID_CHANGE_RENEWAL_PREF/DECREASE_QUANTITY",
        ]
        let all = (v2 + v1 + withSubtypes).map { "\"\($0)\"" }.joined(separator: ", ")
        #expect(Self.filterField(#"{"types": [\#(all)], "bundles": ["com.example.a"]}"#, apps: Self.twoApps) == nil)
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
