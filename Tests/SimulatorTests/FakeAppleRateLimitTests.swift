import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter

/// ``SimWorld/apiRateLimit``: past the rate, per app and judged on the fake's clock, Apple's 429 with
/// `{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}` and `Retry-After` in seconds; none before it, none
/// when it is off (the default).
@Suite struct FakeAppleRateLimitTests {
    /// The fake's clock, moved by the test (ms).
    final class Clock: Sendable {
        let millis = Mutex<Int64>(Sim.t0)
        var now: Int64 { millis.withLock { $0 } }
    }

    /// A fake whose clock the test moves, with the auto-renew subscription stored.
    struct Moving {
        let pki: SimulatorPKI
        let clock = Clock()
        let apple: FakeApple
        let s: SimSubscription

        init(pki: SimulatorPKI) throws {
            self.pki = pki
            let clock = self.clock
            apple = FakeApple(pki: pki, now: { clock.now })
            s = try Sim.finalSubscription("auto-renew", pki: pki)
            let s = self.s
            try apple.store.update { $0.subscriptions[s.originalTransactionID] = s }
        }

        func advance(_ ms: Int64) { clock.millis.withLock { $0 += ms } }

        /// Get All Subscription Statuses for `bundleID`, with a fresh token.
        func ask(bundleID: String = Sim.bundleID) throws -> FakeAppleResponse {
            let seconds = clock.now / 1000
            let token = try AppStoreAPIToken(
                keyID: SimulatorPKI.apiKeyID,
                issuerID: SimulatorPKI.issuerID,
                bundleID: bundleID,
                issuedAt: seconds - 10,
                expiresAt: seconds + 600
            ).signed(with: pki.apiKey)
            return apple.handle(
                FakeAppleRequest(
                    method: "GET",
                    path: "/inApps/v1/subscriptions/\(s.originalTransactionID)",
                    authorization: "Bearer " + token
                )
            )
        }

        func limit(_ requests: Int, per seconds: Int64) throws {
            try apple.store.update {
                $0.apiRateLimit = SimWorld.APIRateLimit(requests: requests, windowSeconds: seconds)
            }
        }
    }

    static func withMoving(_ body: (Moving) throws -> Void) throws {
        try Sim.withPKI { pki throws in try body(try Moving(pki: pki)) }
    }

    @Test func offByDefault() throws {
        try Self.withMoving { m throws in
            #expect(try m.apple.store.read().apiRateLimit == nil)
            for _ in 0..<50 {
                let response = try m.ask()
                #expect(response.status == 200 && response.header("Retry-After") == nil)
            }
        }
    }

    @Test func answers429WithRetryAfterPastTheRateAndNotBefore() throws {
        try Self.withMoving { m throws in
            try m.limit(3, per: 1)
            for i in 0..<3 {
                let response = try m.ask()
                #expect(response.status == 200, "request \(i + 1) is within the rate")
                #expect(response.header("Retry-After") == nil)
                m.advance(100)
            }
            let limited = try m.ask()
            #expect(limited.status == 429)
            #expect(limited.header("Retry-After") == "1")
            #expect(
                String(decoding: limited.body, as: UTF8.self)
                    == #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#
            )
            // Once the first request leaves the one-second window, one more fits.
            m.advance(700)
            #expect(try m.ask().status == 200)
            #expect(try m.ask().status == 429)
        }
    }

    /// `Retry-After` is the whole seconds until the oldest counted request leaves the window.
    @Test func retryAfterSaysWhenTheNextRequestFits() throws {
        try Self.withMoving { m throws in
            try m.limit(2, per: 60)
            #expect(try m.ask().status == 200)  // t0
            m.advance(10_000)
            #expect(try m.ask().status == 200)  // t0 + 10 s
            m.advance(10_500)
            let limited = try m.ask()  // t0 + 20.5 s: the t0 request leaves at t0 + 60 s
            #expect(limited.status == 429 && limited.header("Retry-After") == "40")
            m.advance(39_000)
            #expect(try m.ask().header("Retry-After") == "1", "59.5 s: half a second left, rounded up")
            m.advance(500)
            #expect(try m.ask().status == 200, "waiting as told gets through")
        }
    }

    /// The rate is per app (the token's `bid`); refused requests, and requests without a valid token, do not count.
    @Test func countsAcceptedRequestsPerApp() throws {
        try Self.withMoving { m throws in
            try m.limit(1, per: 10)
            #expect(try m.ask().status == 200)
            #expect(try m.ask().status == 429)
            #expect(
                try m.ask(bundleID: "com.example.other").status == 404,
                "another app's own first request goes through (to a 404)"
            )
            for _ in 0..<5 { #expect(try m.ask().status == 429) }
            let anonymous = m.apple.handle(
                FakeAppleRequest(method: "GET", path: "/inApps/v1/subscriptions/\(m.s.originalTransactionID)")
            )
            #expect(anonymous.status == 401 && anonymous.header("Retry-After") == nil)
            m.advance(10_000)
            #expect(try m.ask().status == 200, "the 429s did not extend the wait")
        }
    }

    /// A limit read from a hand-edited state file cannot trap the fake.
    @Test func extremeLimitsAreAnsweredNotTrapped() throws {
        try Self.withMoving { m throws in
            for (requests, seconds) in [(0, 1), (-5, 60), (1, Int64.max), (Int.max, Int64.min), (1, 0)]
                as [(Int, Int64)]
            {
                try m.limit(requests, per: seconds)
                let response = try m.ask()
                #expect(response.status == 200 || response.status == 429, "\(requests)/\(seconds)")
                if response.status == 429 { #expect(Int64(response.header("Retry-After") ?? "") ?? 0 >= 1) }
                m.advance(400 * 86_400_000)
            }
        }
    }
}
