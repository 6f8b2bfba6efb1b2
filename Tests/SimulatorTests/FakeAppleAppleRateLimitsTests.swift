import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// Apple's rate limits on the fake App Store Server API (``SimWorld/appleRateLimits``, docs/simulator.md, "Apple's
/// rate limits"): per app, endpoint and environment, Apple's rate per second and 3600 times it per hour (a tenth in
/// the sandbox); beyond them Apple's 429 with `Retry-After` a UNIX time in milliseconds; counted in
/// `GET /fake/api/stats`.
@Suite struct FakeAppleAppleRateLimitsTests {
    final class Clock: Sendable {
        let millis = Mutex<Int64>(Sim.t0 + 250)  // a quarter into a second, and into an hour
        var now: Int64 { millis.withLock { $0 } }
        func advance(_ ms: Int64) { millis.withLock { $0 += ms } }
        func set(_ ms: Int64) { millis.withLock { $0 = ms } }
    }

    struct Rig {
        let pki: SimulatorPKI
        let clock = Clock()
        let apple: FakeApple
        let s: SimSubscription

        init(pki: SimulatorPKI, limits: String) throws {
            self.pki = pki
            let clock = self.clock
            apple = FakeApple(pki: pki, now: { clock.now })
            s = try Sim.finalSubscription("auto-renew", pki: pki)
            let s = self.s
            try apple.store.update { $0.subscriptions[s.originalTransactionID] = s }
            let set = apple.handle(
                FakeAppleRequest(method: "POST", path: "/fake/api/apple-rate-limits", query: ["set": limits])
            )
            #expect(set.status == 200)
        }

        func token(_ bundleID: String) throws -> String {
            let seconds = clock.now / 1000
            return try AppStoreAPIToken(
                keyID: SimulatorPKI.apiKeyID,
                issuerID: SimulatorPKI.issuerID,
                bundleID: bundleID,
                issuedAt: seconds - 10,
                expiresAt: seconds + 600
            ).signed(with: pki.apiKey)
        }

        /// Get All Subscription Statuses (or, with `history`, Get Transaction History) for `bundleID`.
        func ask(_ bundleID: String = Sim.bundleID, history: Bool = false) throws -> FakeAppleResponse {
            let path = (history ? "/inApps/v2/history/" : "/inApps/v1/subscriptions/") + s.originalTransactionID
            return apple.handle(
                FakeAppleRequest(method: "GET", path: path, authorization: "Bearer " + (try token(bundleID)))
            )
        }

        func stats() throws -> JSONObject {
            try #require(
                try JSONParser.parse(apple.handle(FakeAppleRequest(method: "GET", path: "/fake/api/stats")).body)
                    .objectValue
            )
        }
    }

    static func with(_ limits: String, _ body: (Rig) throws -> Void) throws {
        try Sim.withPKI { pki throws in try body(try Rig(pki: pki, limits: limits)) }
    }

    /// `requests` asks within one second of the clock; the statuses.
    static func burst(
        _ rig: Rig,
        _ requests: Int,
        _ bundleID: String = Sim.bundleID,
        history: Bool = false
    ) throws -> [Int] {
        try (0..<requests).map { _ in try rig.ask(bundleID, history: history).status }
    }

    @Test func aBurstOverTheRateGetsApples429UntilTheNextSecond() throws {
        try Self.with("production") { rig throws in
            #expect(try Self.burst(rig, 50).allSatisfy { $0 == 200 }, "Apple's 50 per second")
            let limited = try rig.ask()
            #expect(limited.status == 429)
            #expect(
                String(decoding: limited.body, as: UTF8.self)
                    == #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#
            )
            let until = try #require(Int64(limited.header("Retry-After") ?? ""), "a UNIX time in milliseconds")
            #expect(until > rig.clock.now && until <= rig.clock.now + 1_000)
            #expect(until == Sim.t0 + 1_000, "the start of the next second")
            rig.clock.set(until - 1)
            #expect(try rig.ask().status == 429)
            rig.clock.set(until)
            #expect(try rig.ask().status == 200, "waiting as told gets through")
        }
    }

    @Test func theSandboxHasATenthOfTheRate() throws {
        try Self.with("sandbox") { rig throws in
            #expect(try Self.burst(rig, 6) == [200, 200, 200, 200, 200, 429])
            let stats = try rig.stats()
            #expect(stats["apple_rate_limits"]?.stringValue == "sandbox")
            let entry = try #require(stats["endpoints"]?.arrayValue?.first?.objectValue)
            #expect(entry["environment"]?.stringValue == "sandbox")
            #expect(entry["limit_per_second"]?.int64Value == 5 && entry["limit_per_hour"]?.int64Value == 18_000)
        }
    }

    /// Within the rate, request after request, second after second, nothing is refused — until the hour's
    /// allowance (rate × 3600) is spent; then `Retry-After` is the start of the next hour.
    @Test func withinTheRateNever429UntilTheHoursAllowanceIsSpent() throws {
        try Self.with("1") { rig throws in
            rig.clock.set(Sim.t0)  // the start of an hour (t0 is a whole day)
            for second in 0..<3600 {
                #expect(try rig.ask().status == 200, "second \(second)")
                rig.clock.advance(1_000)
            }
            #expect(rig.clock.now == Sim.t0 + 3_600_000, "a new hour: a new allowance")
            #expect(try rig.ask().status == 200)
            #expect(try rig.ask().status == 429)
            #expect(try rig.stats()["answered_429"]?.int64Value == 1)
        }
        try Self.with("2") { rig throws in
            rig.clock.set(Sim.t0 + 1_800_000)  // half past: 2 per second for the rest of the hour
            for _ in 0..<1799 {
                #expect(try Self.burst(rig, 2) == [200, 200])
                rig.clock.advance(1_000)
            }
            #expect(try Self.burst(rig, 3) == [200, 200, 429], "the hour's 7200 are not spent (3598 are): 2 a second")
        }
    }

    @Test func theHoursAllowanceSpentAnswersUntilTheNextHour() throws {
        try Self.with("sandbox") { rig throws in
            rig.clock.set(Sim.t0 + 10 * 3_600_000 + 60_000)
            // Request a Test Notification's sandbox allowance: 0.1 per second — 1 in a second, 360 an hour.
            func test() throws -> FakeAppleResponse {
                rig.apple.handle(
                    FakeAppleRequest(
                        method: "POST",
                        path: "/inApps/v1/notifications/test",
                        authorization: "Bearer " + (try rig.token(Sim.bundleID))
                    )
                )
            }
            #expect(try test().status == 200)
            let second = try test()
            #expect(second.status == 429 && second.header("Retry-After") == String(Sim.t0 + 10 * 3_600_000 + 61_000))
            for _ in 1..<360 {
                rig.clock.advance(1_000)
                #expect(try test().status == 200)
            }
            rig.clock.advance(1_000)
            let spent = try test()
            #expect(spent.status == 429)
            #expect(spent.header("Retry-After") == String(Sim.t0 + 11 * 3_600_000), "the next hour")
        }
    }

    @Test func appsEndpointsAndEnvironmentsAreCountedApart() throws {
        try Self.with("sandbox") { rig throws in
            #expect(try Self.burst(rig, 6).last == 429)
            #expect(try Self.burst(rig, 5, history: true).allSatisfy { $0 == 200 }, "another endpoint: its own rate")
            #expect(try Self.burst(rig, 5, "com.example.other").allSatisfy { $0 == 404 }, "another app: its own rate")
            let set = rig.apple.handle(
                FakeAppleRequest(method: "POST", path: "/fake/api/apple-rate-limits", query: ["set": "production"])
            )
            #expect(set.status == 200)
            #expect(try Self.burst(rig, 50).allSatisfy { $0 == 200 }, "production's counters are not the sandbox's")
            let stats = try rig.stats()
            let rows = (stats["endpoints"]?.arrayValue ?? []).compactMap(\.objectValue).map {
                "\($0["bundle_id"]?.stringValue ?? "") \($0["endpoint"]?.stringValue ?? "") \($0["environment"]?.stringValue ?? "") \($0["calls"]?.int64Value ?? -1) \($0["answered_429"]?.int64Value ?? -1)"
            }
            #expect(
                rows == [
                    "com.example.other Get All Subscription Statuses sandbox 5 0",
                    "\(Sim.bundleID) Get All Subscription Statuses production 50 0",
                    "\(Sim.bundleID) Get All Subscription Statuses sandbox 6 1",
                    "\(Sim.bundleID) Get Transaction History sandbox 5 0",
                ]
            )
            #expect(stats["calls"]?.int64Value == 66 && stats["rate_limited"]?.int64Value == 1)
            let reset = rig.apple.handle(FakeAppleRequest(method: "DELETE", path: "/fake/api/stats"))
            let after = try rig.stats()
            #expect(reset.status == 200 && after["calls"]?.int64Value == 0)
        }
    }

    @Test func offByDefaultYetCounted() throws {
        try Sim.withPKI { pki throws in
            let rig = try Rig(pki: pki, limits: "off")
            #expect(try rig.apple.store.read().appleRateLimits == nil)
            #expect(try Self.burst(rig, 120).allSatisfy { $0 == 200 })
            let stats = try rig.stats()
            #expect(stats["apple_rate_limits"]?.stringValue == "off")
            #expect(stats["calls"]?.int64Value == 120 && stats["answered_429"]?.int64Value == 0)
        }
    }

    @Test func settingsAreReadAsWritten() {
        #expect(AppleRateLimits.setting("production") == .some(.production))
        #expect(AppleRateLimits.setting("sandbox") == .some(.sandbox))
        #expect(AppleRateLimits.setting("off") == .some(nil))
        #expect(AppleRateLimits.setting("7") == .some(AppleRateLimits(perSecond: 7)))
        for junk in ["", "0", "-1", "1.5", "Production", "100001", " 5", "99999999999999999999"] {
            #expect(AppleRateLimits.setting(junk) == nil, "\(junk)")
        }
    }
}
