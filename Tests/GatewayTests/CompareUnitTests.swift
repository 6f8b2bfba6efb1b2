import Canonical
import Gateway
import ReportModel
import Testing

/// The pure parts of the comparison: field-by-field snapshot comparison, the compare settings and per-environment
/// authority in the config, and what the service refuses to start with.
@Suite struct CompareUnitTests {
    static func snapshot(
        _ source: EventSource,
        expires: Int64? = 2_000,
        revoked: Int64? = nil,
        grace: Int64? = nil,
        product: String? = "m",
        autoRenew: Bool? = true,
        retry: Bool? = false,
        observed: Int64 = 1_000
    ) -> OutcomeSnapshot {
        OutcomeSnapshot(
            source: source,
            bundleID: "b",
            environment: .sandbox,
            originalTransactionID: "1",
            productID: product,
            transactionID: "t",
            expiresDate: expires,
            revocationDate: revoked,
            gracePeriodExpiresDate: grace,
            autoRenew: autoRenew,
            autoRenewProductID: product,
            inBillingRetry: retry,
            expirationIntent: nil,
            observedAt: observed
        )
    }

    @Test func identicalFactsAgree() {
        #expect(OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt), v2: Self.snapshot(.v2API)).isEmpty)
    }

    @Test func eachPlantedDifferenceIsNamed() {
        let v2 = Self.snapshot(.v2API)
        #expect(
            OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt, expires: 2_000 + 86_400_000), v2: v2) == [
                "expires_date"
            ]
        )
        #expect(
            OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt), v2: Self.snapshot(.v2API, revoked: 1_500))
                == ["entitlement", "revocation_date"]
        )
        #expect(
            OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt, autoRenew: false), v2: v2) == ["auto_renew"]
        )
        #expect(
            OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt, product: "p"), v2: v2) == [
                "product_id", "auto_renew_product_id",
            ]
        )
        // Expired by V1's date, in grace by V2's: the entitlement differs too.
        #expect(
            OutcomeComparison.disagreements(
                v1: Self.snapshot(.v1Receipt, expires: 500),
                v2: Self.snapshot(.v2API, expires: 500, grace: 5_000)
            )
                == ["entitlement", "grace_period_expires_date"]
        )
    }

    @Test func unknownFactsAreNotHeldAgainstTheOtherPath() {
        // Old receipts do not say whether billing is retried; V2 does.
        #expect(
            OutcomeComparison.disagreements(
                v1: Self.snapshot(.v1Receipt, retry: nil),
                v2: Self.snapshot(.v2API, retry: false)
            ).isEmpty
        )
        #expect(
            OutcomeComparison.disagreements(v1: Self.snapshot(.v1Receipt, autoRenew: nil), v2: Self.snapshot(.v2API))
                .isEmpty
        )
    }

    @Test func entitlementIsComparedAtTheLaterObservation() {
        // V1 observed just before the expiry, V2 just after: the same facts, the same answer at the later moment.
        let v1 = Self.snapshot(.v1Receipt, expires: 2_000, observed: 1_999)
        let v2 = Self.snapshot(.v2API, expires: 2_000, observed: 2_001)
        #expect(v1.entitlement.state != v2.entitlement.state)
        #expect(OutcomeComparison.disagreements(v1: v1, v2: v2).isEmpty)
    }

    @Test func compareSettingsAndPerEnvironmentAuthorityParse() throws {
        let c = try GatewayConfigTests.parse(
            """
            { "apps": [ { "bundle_id": "b", "app_apple_id": 1, "authority": { "production": "v1", "sandbox": "v2" }, "compare": true } ],
              "compare": { "tolerance": "5m", "grace": "2h", "confirm_delay": "2s", "concurrency": 3, "min_pairs": 50, "min_agreement_rate": 0.99,
                           "window": "3d", "allow_one_sided": true },
              "silence_alert": "1h" }
            """
        )
        #expect(c.apps[0].authority(for: .production) == .v1 && c.apps[0].authority(for: .sandbox) == .v2)
        #expect(
            c.compareSettings.toleranceMillis == 300_000 && c.compareSettings.graceMillis == 7_200_000
                && c.compareSettings.concurrency == 3
        )
        #expect(c.compareSettings.confirmDelayMillis == 2_000)
        #expect(c.compareSettings.rule.minimumPairs == 50 && c.compareSettings.rule.minimumAgreementRate == 0.99)
        #expect(c.compareSettings.rule.windowMillis == 3 * 86_400_000 && c.compareSettings.rule.allowOneSided)
        #expect(c.silenceAlertMillis == 3_600_000)
        #expect(c.compareSettings.rule.text == "≥ 99.0 % agreement over ≥ 50 pairs in the last 3 days")
        // 0.995 is not exactly representable: the threshold must still read 99.5, not 99.4.
        #expect(ReadinessRule().thresholdText == "99.5 %")
    }

    @Test(arguments: [
        (#"{"compare": {"min_agreement_rate": 1.5}}"#, "compare.min_agreement_rate"),
        (#"{"compare": {"grace": "soon"}}"#, "compare.grace"),
        (#"{"compare": {"typo": 1}}"#, "compare.typo"),
        (#"{"silence_alert": "x"}"#, "silence_alert"),
        (
            #"{"apps": [{"bundle_id": "b", "app_apple_id": 1, "authority": {"production": "v3"}}]}"#,
            "apps[0].authority.production"
        ),
    ])
    func badCompareSettingsNameTheirField(json: String, field: String) {
        #expect(GatewayConfigTests.field(json) == field)
    }

    @Test func v2AuthorityOrCompareForAnAppThatTakesV1NeedsTheV2Path() throws {
        let c = try GatewayConfigTests.parse(
            """
            { "apps": [ { "bundle_id": "b", "app_apple_id": 1, "shared_secret_env": "S", "authority": "v2", "compare": true },
                        { "bundle_id": "v2only", "app_apple_id": 2, "authority": "v2" } ] }
            """
        )
        let effective: [(bundle: String, environment: String, authority: Generation)] =
            [("b", "production", .v2), ("b", "sandbox", .v2), ("v2only", "production", .v2)]
        let problems = c.authorityProblems(effective: effective, v2PathAvailable: false)
        #expect(problems.map(\.field) == ["apps[b].compare", "apps[b].authority", "apps[b].authority"])
        #expect(c.authorityProblems(effective: effective, v2PathAvailable: true).isEmpty)
        // V1 authoritative, no comparison: nothing needs the API.
        let plain = try GatewayConfigTests.parse(
            #"{ "apps": [ { "bundle_id": "b", "app_apple_id": 1, "shared_secret_env": "S" } ] }"#
        )
        #expect(plain.authorityProblems(effective: [("b", "production", .v1)], v2PathAvailable: false).isEmpty)
    }
}
