import Canonical
import Testing

/// What reconciliation makes of a difference between the stored state and Apple's (docs/operations.md).
@Suite struct ReconciliationTests {
    static let now: Int64 = 1_000_000_000_000
    static let day: Int64 = 86_400_000

    static func snapshot(
        expires: Int64? = now + day,
        revoked: Int64? = nil,
        grace: Int64? = nil,
        retry: Bool? = false,
        autoRenew: Bool? = true,
        product: String = "monthly",
        next: String = "monthly"
    ) -> OutcomeSnapshot {
        OutcomeSnapshot(
            source: .v2API,
            bundleID: "b",
            environment: .sandbox,
            originalTransactionID: "o",
            productID: product,
            transactionID: "t",
            expiresDate: expires,
            revocationDate: revoked,
            gracePeriodExpiresDate: grace,
            autoRenew: autoRenew,
            autoRenewProductID: next,
            inBillingRetry: retry,
            expirationIntent: nil,
            observedAt: 0
        )
    }

    static func change(_ stored: OutcomeSnapshot, _ apple: OutcomeSnapshot) -> String? {
        Reconciliation.change(stored: stored, apple: apple, at: now).map { c in
            c.reason.map { "\(c.kind.rawValue)/\($0.rawValue)" } ?? c.kind.rawValue
        }
    }

    @Test func agreementProducesNothing() {
        #expect(Self.change(Self.snapshot(), Self.snapshot()) == nil)
        // Within the comparison's slack.
        #expect(
            Self.change(Self.snapshot(expires: Self.now + Self.day), Self.snapshot(expires: Self.now + Self.day + 500))
                == nil
        )
    }

    @Test func theKindSaysWhatChanged() {
        let stored = Self.snapshot(expires: Self.now - 3_600_000)
        #expect(Self.change(stored, Self.snapshot(expires: Self.now + 30 * Self.day)) == "renewal/auto")
        #expect(
            Self.change(Self.snapshot(retry: true), Self.snapshot(expires: Self.now + 30 * Self.day))
                == "renewal/billing_recovery"
        )
        #expect(Self.change(Self.snapshot(), Self.snapshot(revoked: Self.now - 1000)) == "refund")
        #expect(Self.change(Self.snapshot(revoked: Self.now - 1000), Self.snapshot()) == "refund_reversed")
        #expect(
            Self.change(Self.snapshot(), Self.snapshot(expires: Self.now - 1000, retry: true))
                == "renewal_failure/billing_retry"
        )
        #expect(
            Self.change(
                Self.snapshot(),
                Self.snapshot(expires: Self.now - 1000, grace: Self.now + Self.day, retry: true)
            )
                == "renewal_failure/grace_period"
        )
        #expect(
            Self.change(
                Self.snapshot(expires: Self.now - 1000, grace: Self.now + 1000, retry: true),
                Self.snapshot(expires: Self.now - 1000, grace: Self.now - 10, retry: false)
            ) == "grace_period_expired"
        )
        #expect(
            Self.change(Self.snapshot(autoRenew: true), Self.snapshot(autoRenew: false))
                == "auto_renew_changed/disabled"
        )
        #expect(
            Self.change(Self.snapshot(autoRenew: false), Self.snapshot(autoRenew: true)) == "auto_renew_changed/enabled"
        )
        #expect(Self.change(Self.snapshot(), Self.snapshot(next: "yearly")) == "plan_change")
        #expect(
            Self.change(Self.snapshot(product: "monthly"), Self.snapshot(product: "premium")) == "plan_change/upgrade"
        )
    }

    @Test func anExpiryTheStoreMissedIsAnExpiration() {
        // Stored: active until an hour from now; Apple: expired yesterday (the renewal date moved back, auto-renew off).
        #expect(
            Self.change(
                Self.snapshot(expires: Self.now + 3_600_000, autoRenew: false),
                Self.snapshot(expires: Self.now - Self.day, autoRenew: false)
            )
                == "expiration/voluntary"
        )
    }
}
