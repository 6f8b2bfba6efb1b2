import Canonical
import Foundation
import Testing

@Suite struct EntitlementTests {
    /// 2025-06-01T00:00:00Z in milliseconds.
    static let now: Int64 = 1_748_736_000_000
    static let day: Int64 = 86_400_000

    static func compute(
        expires: Int64? = nil,
        revoked: Int64? = nil,
        grace: Int64? = nil,
        retry: Bool? = nil,
        at time: Int64 = now
    ) -> Entitlement {
        Entitlement.compute(
            expiresDate: expires,
            revocationDate: revoked,
            gracePeriodExpiresDate: grace,
            inBillingRetry: retry,
            at: time
        )
    }

    // MARK: one test per rule of the doc comment

    @Test func rule1ARevocationDateRevokesWhateverTheOtherFactsSay() {
        let e = Self.compute(
            expires: Self.now + 30 * Self.day,
            revoked: Self.now - Self.day,
            grace: Self.now + 40 * Self.day,
            retry: true
        )
        #expect(e == Entitlement(state: .revoked, until: nil))
        #expect(!e.grantsAccess)
    }

    @Test func rule1ARevocationWithoutAnExpiryStillRevokes() {
        #expect(Self.compute(revoked: Self.now).state == .revoked)
        // A revocation dated after the event time counts too: the date's presence decides, not its value.
        #expect(Self.compute(revoked: Self.now + Self.day).state == .revoked)
    }

    @Test func rule2NoExpiryDateMeansActiveWithoutEnd() {
        #expect(Self.compute() == Entitlement(state: .active, until: nil))
        // Grace and billing-retry facts do not matter without an expiry.
        #expect(Self.compute(grace: Self.now - Self.day, retry: true) == Entitlement(state: .active, until: nil))
    }

    @Test func rule3AnExpiryAfterTheTimeMeansActiveUntilTheExpiry() {
        let expires = Self.now + 1
        #expect(Self.compute(expires: expires) == Entitlement(state: .active, until: expires))
        // A later grace end does not extend `until` while the paid period runs.
        #expect(
            Self.compute(expires: expires, grace: expires + 16 * Self.day, retry: true)
                == Entitlement(state: .active, until: expires)
        )
    }

    @Test func rule4AGracePeriodEndingAfterTheTimeMeansGraceUntilItsEnd() {
        let grace = Self.now + 6 * Self.day
        #expect(
            Self.compute(expires: Self.now - Self.day, grace: grace, retry: true)
                == Entitlement(state: .gracePeriod, until: grace)
        )
        #expect(
            Self.compute(expires: Self.now - Self.day, grace: grace) == Entitlement(state: .gracePeriod, until: grace)
        )
    }

    @Test func rule5BillingRetryAfterExpiryAndGrace() {
        #expect(
            Self.compute(expires: Self.now - Self.day, retry: true) == Entitlement(state: .billingRetry, until: nil)
        )
        #expect(
            Self.compute(expires: Self.now - 2 * Self.day, grace: Self.now - Self.day, retry: true)
                == Entitlement(state: .billingRetry, until: nil)
        )
    }

    @Test func rule6OtherwiseExpired() {
        #expect(Self.compute(expires: Self.now - Self.day) == Entitlement(state: .expired, until: nil))
        #expect(
            Self.compute(expires: Self.now - 2 * Self.day, grace: Self.now - Self.day, retry: false)
                == Entitlement(state: .expired, until: nil)
        )
    }

    // MARK: boundaries

    @Test func anExpiryEqualToTheTimeIsNoLongerActive() {
        #expect(Self.compute(expires: Self.now) == Entitlement(state: .expired, until: nil))
        #expect(Self.compute(expires: Self.now, at: Self.now - 1) == Entitlement(state: .active, until: Self.now))
    }

    @Test func aGraceEndEqualToTheTimeIsNoLongerGrace() {
        #expect(Self.compute(expires: Self.now - Self.day, grace: Self.now) == Entitlement(state: .expired, until: nil))
        #expect(
            Self.compute(expires: Self.now - Self.day, grace: Self.now, retry: true)
                == Entitlement(state: .billingRetry, until: nil)
        )
        #expect(
            Self.compute(expires: Self.now - Self.day, grace: Self.now, at: Self.now - 1)
                == Entitlement(state: .gracePeriod, until: Self.now)
        )
    }

    @Test func revocationWinsOverAFutureExpiry() {
        #expect(Self.compute(expires: Self.now + 365 * Self.day, revoked: Self.now).state == .revoked)
    }

    @Test(arguments: [false, nil] as [Bool?])
    func billingRetryFalseOrUnknownMeansExpired(_ retry: Bool?) {
        #expect(Self.compute(expires: Self.now - Self.day, retry: retry) == Entitlement(state: .expired, until: nil))
    }

    // MARK: grantsAccess

    @Test(arguments: [
        (Entitlement.State.active, true), (.gracePeriod, true), (.billingRetry, false), (.expired, false),
        (.revoked, false), (Entitlement.State(rawValue: "future_state"), false),
    ])
    func grantsAccessOnlyWhileActiveOrInGrace(_ state: Entitlement.State, _ grants: Bool) {
        #expect(Entitlement(state: state, until: nil).grantsAccess == grants)
        #expect(Entitlement(state: state, until: Self.now).grantsAccess == grants)
    }

    @Test func stateWireStringsMatchTheDesign() {
        #expect(
            [Entitlement.State.active, .gracePeriod, .billingRetry, .expired, .revoked].map(\.rawValue)
                == ["active", "grace_period", "billing_retry", "expired", "revoked"]
        )
    }

    // MARK: JSON

    @Test func encodesUntilAsNullWhenAbsent() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let none = String(decoding: try encoder.encode(Entitlement(state: .expired, until: nil)), as: UTF8.self)
        #expect(none == #"{"state":"expired","until":null}"#)
        let some = String(
            decoding: try encoder.encode(Entitlement(state: .active, until: 1_893_456_000_000)),
            as: UTF8.self
        )
        #expect(some == #"{"state":"active","until":1893456000000}"#)
    }

    @Test func decodesWithOrWithoutUntil() throws {
        let decoder = JSONDecoder()
        #expect(
            try decoder.decode(Entitlement.self, from: Data(#"{"state":"revoked"}"#.utf8))
                == Entitlement(state: .revoked, until: nil)
        )
        #expect(
            try decoder.decode(Entitlement.self, from: Data(#"{"state":"revoked","until":null}"#.utf8))
                == Entitlement(state: .revoked, until: nil)
        )
        #expect(
            try decoder.decode(Entitlement.self, from: Data(#"{"state":"grace_period","until":5}"#.utf8))
                == Entitlement(state: .gracePeriod, until: 5)
        )
        #expect(throws: DecodingError.self) { try decoder.decode(Entitlement.self, from: Data(#"{"until":5}"#.utf8)) }
    }

    @Test func projectionEndsPeriodsThatHaveRunOut() {
        #expect(Entitlement(state: .active, until: 100).projected(at: 99) == Entitlement(state: .active, until: 100))
        #expect(Entitlement(state: .active, until: 100).projected(at: 100) == Entitlement(state: .expired, until: nil))
        #expect(
            Entitlement(state: .gracePeriod, until: 100).projected(at: 150)
                == Entitlement(state: .billingRetry, until: nil)
        )
        #expect(Entitlement(state: .active, until: nil).projected(at: .max) == Entitlement(state: .active, until: nil))
        #expect(Entitlement(state: .revoked, until: nil).projected(at: 150) == Entitlement(state: .revoked, until: nil))
        #expect(
            Entitlement(state: .billingRetry, until: nil).projected(at: 150)
                == Entitlement(state: .billingRetry, until: nil)
        )
    }
}
