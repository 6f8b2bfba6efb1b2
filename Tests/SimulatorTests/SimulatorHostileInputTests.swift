import Canonical
import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter

/// The simulator serves HTTP (its fake Apple) and takes numbers from the command line and its state file: hostile
/// values are answered or refused, never a trap.
@Suite struct SimulatorHostileInputTests {
    /// The simulator error code `body` fails with; nil when it succeeds.
    static func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as SimulatorError {
            return error.code
        } catch {
            return "not a SimulatorError: \(error)"
        }
    }

    static func withHarness(_ body: (FakeAppleHarness, SimSubscription) throws -> Void) throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("auto-renew", pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let harness = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try harness.put(s)
            try body(harness, s)
        }
    }

    // MARK: bearer tokens

    @Test func tokenDatesAtInt64sEndsAreRefusedNotTrapped() throws {
        try Self.withHarness { h, s throws in
            let path = "/inApps/v1/subscriptions/\(s.originalTransactionID)"
            let pairs: [(Int64, Int64)] = [(.min, .max), (.min, 0), (-1, .max), (.max - 1, .max), (.min, .min + 1)]
            for (iat, exp) in pairs {
                let token = try AppStoreAPIToken(
                    keyID: SimulatorPKI.apiKeyID,
                    issuerID: SimulatorPKI.issuerID,
                    bundleID: Sim.bundleID,
                    issuedAt: iat,
                    expiresAt: exp
                ).signed(with: h.pki.apiKey)
                #expect(h.api("GET", path, token: token).status == 401, "iat \(iat) exp \(exp)")
            }
        }
    }

    @Test func tokenVerificationAtAnyClockNeverTraps() throws {
        let key = try PrivateKey.generateP256()
        let token = try AppStoreAPIToken(keyID: "k", issuerID: "i", bundleID: "b", issuedAt: .min, expiresAt: .max)
            .signed(with: key)
        #expect(throws: AppStoreAPIToken.Rejection.tooLong) {
            try AppStoreAPIToken.verify(token, publicKey: key.publicKey, now: 0)
        }
        let normal = try AppStoreAPIToken(keyID: "k", issuerID: "i", bundleID: "b", issuedAt: 100, expiresAt: 700)
            .signed(with: key)
        #expect(throws: AppStoreAPIToken.Rejection.expired) {
            try AppStoreAPIToken.verify(normal, publicKey: key.publicKey, now: .max)
        }
        #expect(throws: AppStoreAPIToken.Rejection.notYetValid) {
            try AppStoreAPIToken.verify(normal, publicKey: key.publicKey, now: .min)
        }
        _ = try AppStoreAPIToken.verify(normal, publicKey: key.publicKey, now: 200)
    }

    // MARK: pagination tokens

    @Test func hostileRevisionsAndPaginationTokensAreAnsweredOrRefused() throws {
        try Self.withHarness { h, s throws in
            let history = "/inApps/v2/history/\(s.originalTransactionID)"
            let request = try Sim.json(NotificationHistoryRequest(startDate: .min, endDate: .max))
            for token in [
                "9223372036854775807", "9223372036854775806", "9223372036854775808", "99999999999999999999999",
                "-9223372036854775808",
                "", " 1", "1e3", "0x10", String(repeating: "9", count: 10_000),
            ] {
                let page = try h.get(history, query: ["revision": token])
                let notifications = try h.post(
                    "/inApps/v1/notifications/history",
                    query: ["paginationToken": token],
                    body: request
                )
                for response in [page, notifications] {
                    #expect(response.status == 200 || response.status == 400, "\(token.prefix(30))")
                }
                if page.status == 200 {
                    let p = try Sim.decode(HistoryResponse.self, page)
                    #expect(p.signedTransactions.isEmpty && !p.hasMore)
                }
            }
        }
    }

    /// Dates at Int64's ends are answered, never trapped: a negative date is refused (4000015 / 4000016), an end
    /// date in the future means now (so a start after now is 4000013), and the widest valid window is fine.
    @Test func notificationHistoryWithDatesAtInt64sEndsIsAnswered() throws {
        try Self.withHarness { h, _ throws in
            for (start, end, code) in [
                (Int64.min, Int64.max, 4_000_015), (Int64.max - 1, Int64.max, 4_000_013),
                (Int64.min, Int64.min + 1, 4_000_015),
                (0, -1, 4_000_016), (0, Int64.max, 0),
            ] as [(Int64, Int64, Int64)] {
                let response = try h.post(
                    "/inApps/v1/notifications/history",
                    body: try Sim.json(NotificationHistoryRequest(startDate: start, endDate: end))
                )
                #expect(response.status == (code == 0 ? 200 : 400), "\(start)..<\(end)")
                if code != 0 { #expect(try FakeAppleHarness.errorCode(response) == code, "\(start)..<\(end)") }
            }
            // Retention at Int64's end does not overflow either.
            try h.store.update { $0.notificationHistoryDays = Int.max }
            let wide = try h.post(
                "/inApps/v1/notifications/history",
                body: try Sim.json(NotificationHistoryRequest(startDate: 0, endDate: Int64.max))
            )
            #expect(wide.status == 200)
        }
    }

    // MARK: state file

    @Test func skewAtInt64sEndsDoesNotTrapTheFakeVerifyReceipt() throws {
        try Self.withHarness { h, s throws in
            for offset in [Int64.max, Int64.min] {
                try h.store.update { $0.v1Skew.expiresOffsetMillis = offset }
                let answer = try h.verifyReceipt(sandbox: true, receipt: s.receiptToken)
                #expect(answer.statusCode == 0)
                let expiries = (answer.latestReceiptInfo?.items ?? []).compactMap(\.expiresMillis)
                // Past Int64.max the sum is clamped; Int64.min added to a positive date is an exact (negative) sum.
                #expect(!expiries.isEmpty && expiries.allSatisfy { offset > 0 ? $0 == .max : $0 < 0 })
            }
        }
    }

    @Test func idsStayWellFormedWhateverTheStoredCounter() {
        for start in [Int64.max, Int64.max - 1, 999_999_999_999_999, 1_000_000_000_000_000, -5] {
            var world = SimWorld()
            world.nextID = start
            let a = world.newID()
            let b = world.newID()
            #expect(a.hasPrefix("2") && b.hasPrefix("2") && a.count >= 16, "\(start)")
        }
        var world = SimWorld()
        #expect(world.newID() == "2000000000000001")
    }

    // MARK: command-line numbers

    @Test(arguments: [Int64.min, -1, 0, 366 * 86_400_000 + 1, Int64.max / 12, Int64.max] as [Int64])
    func monthLengthsOutsideTheSupportedRangeAreRefused(monthMillis: Int64) throws {
        try Sim.withPKI { pki throws in
            let lifecycle = try #require(Lifecycles.named("downgrade"))
            let emitter = Emitter(pki: pki)
            #expect(
                Self.code {
                    _ = try lifecycle.plan(
                        bundleID: Sim.bundleID,
                        sharedSecret: Sim.secret,
                        emitter: emitter,
                        start: Sim.t0,
                        monthMillis: monthMillis
                    )
                } == "bad_argument"
            )
            #expect(
                Self.code {
                    _ = try lifecycle.planEndingAt(
                        Sim.t0,
                        bundleID: Sim.bundleID,
                        sharedSecret: Sim.secret,
                        emitter: emitter,
                        monthMillis: monthMillis
                    )
                } == "bad_argument"
            )
        }
    }

    @Test func startsAndEndsAtInt64sEndsAreRefused() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki)
            for lifecycle in Lifecycles.all {
                for start in [Int64.min, Int64.max, Int64.max - 366 * 86_400_000] {
                    #expect(
                        Self.code {
                            _ = try lifecycle.plan(
                                bundleID: Sim.bundleID,
                                sharedSecret: Sim.secret,
                                emitter: emitter,
                                start: start,
                                monthMillis: Sim.month
                            )
                        } == "bad_argument"
                    )
                    #expect(
                        Self.code {
                            _ = try lifecycle.planEndingAt(
                                start,
                                margin: 1_000,
                                bundleID: Sim.bundleID,
                                sharedSecret: Sim.secret,
                                emitter: emitter,
                                monthMillis: Sim.month
                            )
                        } == "bad_argument"
                    )
                }
                #expect(
                    Self.code {
                        _ = try lifecycle.planEndingAt(
                            Sim.t0,
                            margin: .min,
                            bundleID: Sim.bundleID,
                            sharedSecret: Sim.secret,
                            emitter: emitter,
                            monthMillis: Sim.month
                        )
                    } == "bad_argument"
                )
                // The longest supported month from the last supported moment still plays.
                _ = try lifecycle.planEndingAt(
                    253_402_300_799_999,
                    bundleID: Sim.bundleID,
                    sharedSecret: Sim.secret,
                    emitter: emitter,
                    monthMillis: 366 * 86_400_000
                )
            }
        }
    }
}
