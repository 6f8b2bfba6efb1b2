import Canonical
import Gateway
import ServiceKit
import Store
import TestSupport
import Testing

@Suite struct GatewayConfigTests {
    static func parse(_ json: String) throws(ConfigError) -> GatewayConfig {
        try GatewayConfig.parse(Array(json.utf8), baseDirectory: "/etc/iapgw")
    }

    static func field(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch { return error.field }
    }

    @Test func readsTheDesignDocumentsExample() throws {
        let c = try Self.parse(
            """
            {
              "listen": "127.0.0.1:8080",
              "admin": { "listen": "127.0.0.1:8081", "token_env": "IAPGW_ADMIN_TOKEN" },
              "store": { "sqlite": "data/gateway.db" },
              "trust": { "extra_roots": [] },
              "verify_receipt": { "production_url": "https://buy.itunes.apple.com/verifyReceipt",
                                  "sandbox_url": "https://sandbox.itunes.apple.com/verifyReceipt" },
              "apps": [
                { "bundle_id": "com.example.app", "app_apple_id": 1234,
                  "environments": ["production", "sandbox"],
                  "shared_secret_env": ["EXAMPLE_APP_SHARED_SECRET"],
                  "authority": "v1", "compare": false, "verify_receipt": true, "downstreams": ["main", "legacy"] }
              ],
              "downstreams": [
                { "name": "main", "url": "http://127.0.0.1:9000/events", "secret_env": "MAIN_WEBHOOK_SECRET",
                  "environments": ["production"], "shadow": false, "include_raw": false, "max_attempts": 12 },
                { "name": "legacy", "kind": "v1_passthrough", "url": "http://127.0.0.1:9100/apple/v1" }
              ],
              "app_store_api": { "production_url": "https://api.storekit.apple.com",
                                 "sandbox_url": "https://api.storekit-sandbox.apple.com",
                                 "issuer_id": "x", "key_id": "y", "private_key_env": "APPSTORE_P8_PEM" },
              "max_notification_age": "10d"
            }
            """
        )
        #expect(c.sqlitePath == "/etc/iapgw/data/gateway.db")
        #expect(c.apps.count == 1 && c.apps[0].appAppleID == 1234 && c.apps[0].environments == [.production, .sandbox])
        #expect(c.apps[0].sharedSecretEnv == ["EXAMPLE_APP_SHARED_SECRET"])
        #expect(c.downstreams.map(\.kind) == [.webhook, .v1Passthrough])
        #expect(c.downstreams[1].environments == [.production])
        #expect(c.maxNotificationAgeMillis == 10 * 86_400_000)
        #expect(c.appStoreAPI.privateKeyEnv == "APPSTORE_P8_PEM")
    }

    @Test func resolvesRelativeRootPathsAgainstTheConfigFolder() throws {
        let c = try GatewayConfig.load(path: Fixtures.url("config/synthetic-sandbox.json").path())
        #expect(c.extraRoots.count == 1)
        #expect(c.extraRoots[0].hasSuffix("Fixtures/config/../test-pki/root.der"))
    }

    @Test(arguments: [
        (#"{"lisen": "x"}"#, "lisen"),
        (#"{"apps": [{"bundle_id": "a"}]}"#, "apps[0].app_apple_id"),
        (#"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "authority": "v3"}]}"#, "apps[0].authority"),
        (#"{"apps": [{"bundle_id": "a", "environments": ["staging"]}]}"#, "apps[0].environments[0]"),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "downstreams": ["nope"]}]}"#,
            "apps[0].downstreams[0]"
        ),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"]}, {"bundle_id": "a", "environments": ["sandbox"]}]}"#,
            "apps[1].bundle_id"
        ),
        (#"{"apps": [{"environments": ["sandbox"]}]}"#, "apps[0].bundle_id"),
        (#"{"apps": [{"bundle_id": "a", "app_apple_id": "12"}]}"#, "apps[0].app_apple_id"),
        (#"{"downstreams": [{"name": "d", "url": "ftp://x"}]}"#, "downstreams[0].url"),
        (#"{"downstreams": [{"name": "d", "url": "http://x", "kind": "carrier_pigeon"}]}"#, "downstreams[0].kind"),
        (#"{"downstreams": [{"name": "d", "url": "http://x", "max_attempts": 0}]}"#, "downstreams[0].max_attempts"),
        (#"{"trust": {"extra_roots": "x.der", "pin": 1}}"#, "trust.pin"),
        (#"{"max_notification_age": "ten days"}"#, "max_notification_age"),
        (#"{"verify_receipt": {"production_url": "buy.itunes.apple.com"}}"#, "verify_receipt.production_url"),
        (#"{"max_notification_age": "106751991167d"}"#, "max_notification_age"),
        (#"{"raw_body_retention": "36501d"}"#, "raw_body_retention"),
        (#"{"limits": {"untrusted_quarantine_bytes": "1KiB"}}"#, "limits.untrusted_quarantine_bytes"),
        (#"{"limits": {"genuine_quarantine_bytes": "99999999999999999999GiB"}}"#, "limits.genuine_quarantine_bytes"),
        (#"{"limits": {"genuine_quarantine_bytes": true}}"#, "limits.genuine_quarantine_bytes"),
        (
            #"{"downstreams": [{"name": "d", "url": "http://x", "retry_delay": "1h", "max_retry_delay": "1m"}]}"#,
            "downstreams[0].retry_delay"
        ),
        (
            #"{"downstreams": [{"name": "d", "url": "http://x", "max_retry_delay": "forever"}]}"#,
            "downstreams[0].max_retry_delay"
        ),
        (#"{"reconcile": {"every": "hourly"}}"#, "reconcile.every"),
        (#"{"reconcile": {"history_sweep": "0s"}}"#, "reconcile.history_sweep"),
        (#"{"reconcile": {"silent_for": "off"}}"#, "reconcile.silent_for"),
        (#"{"reconcile": {"requests_per_hour": 0}}"#, "reconcile.requests_per_hour"),
        (#"{"reconcile": {"alert_after": 1000001}}"#, "reconcile.alert_after"),
        (#"{"reconcile": {"sweep": "1h"}}"#, "reconcile.sweep"),
        (#"{"reconcile": {"history_lag": "-5m"}}"#, "reconcile.history_lag"),
        (#"{"reconcile": {"history_lag": "25h"}}"#, "reconcile.history_lag"),
        (#"{"reconcile": {"history_lag": "soon"}}"#, "reconcile.history_lag"),
        (#"{"reconcile": {"history_lag": "off"}}"#, "reconcile.history_lag"),
        (#"{"reconcile": {"history_lag": 600}}"#, "reconcile.history_lag"),
        (#"{"compare": {"concurrency": 65}}"#, "compare.concurrency"),
        (#"[1]"#, ""),
        (#"{"#, ""),
    ])
    func invalidConfigNamesTheField(_ json: String, _ field: String) {
        #expect(Self.field(json) == field)
    }

    @Test func reconcileIsOnByDefaultAndEachScheduleCanBeTurnedOff() throws {
        let defaults = try Self.parse("{}").reconcile
        #expect(defaults.everyMillis == 3_600_000 && defaults.historySweepMillis == 3_600_000)
        #expect(defaults.expiringWithinMillis == 48 * 3_600_000 && defaults.silentForMillis == 24 * 3_600_000)
        let set = try Self.parse(
            #"""
            {"reconcile": {"every": "off", "history_sweep": "30m", "expiring_within": "3d", "silent_for": "12h", "history_overlap": "2h",
                           "history_first_window": "180d", "requests_per_hour": 50, "alert_after": 7}}
            """#
        ).reconcile
        #expect(set.everyMillis == nil && set.historySweepMillis == 1_800_000)
        #expect(set.expiringWithinMillis == 3 * 86_400_000 && set.silentForMillis == 12 * 3_600_000)
        #expect(set.historyOverlapMillis == 7_200_000 && set.historyFirstWindowMillis == 180 * 86_400_000)
        #expect(set.requestsPerHour == 50 && set.alertAfter == 7)
        #expect(try Self.parse(#"{"reconcile": {"history_sweep": "off"}}"#).reconcile.historySweepMillis == nil)
    }

    @Test func theHistorySweepLagsTenMinutesBehindNowUnlessConfiguredFromZeroToADay() throws {
        #expect(try Self.parse("{}").reconcile.historyLagMillis == 600_000)
        #expect(try Self.parse(#"{"reconcile": {}}"#).reconcile.historyLagMillis == 600_000)
        #expect(try Self.parse(#"{"reconcile": {"history_lag": "0s"}}"#).reconcile.historyLagMillis == 0)
        #expect(try Self.parse(#"{"reconcile": {"history_lag": "0"}}"#).reconcile.historyLagMillis == 0)
        #expect(try Self.parse(#"{"reconcile": {"history_lag": "90s"}}"#).reconcile.historyLagMillis == 90_000)
        #expect(try Self.parse(#"{"reconcile": {"history_lag": "1d"}}"#).reconcile.historyLagMillis == 86_400_000)
        #expect(Self.field(#"{"reconcile": {"history_lag": "86400001ms"}}"#) == "reconcile.history_lag")
    }

    @Test func theReceiptPathsBoundsAreAllOfItAndPerAddress() throws {
        let defaults = try Self.parse("{}").receiptSettings
        #expect(defaults.maxInFlight == 64 && defaults.maxInFlightPerAddress == 32)
        let set = try Self.parse(#"{"receipts": {"max_in_flight": 8, "max_in_flight_per_address": 0}}"#)
        #expect(set.receiptSettings.maxInFlight == 8 && set.receiptSettings.maxInFlightPerAddress == 0)
        #expect(Self.field(#"{"receipts": {"max_in_flight": 0}}"#) == "receipts.max_in_flight")
        #expect(
            Self.field(#"{"receipts": {"max_in_flight": 8, "max_in_flight_per_address": 9}}"#)
                == "receipts.max_in_flight_per_address"
        )
    }

    @Test func theStoreIsSQLiteOrPostgresNeverBoth() throws {
        let pg = try GatewayConfig.parse(
            Array(#"{"store": {"postgres": {"url_env": "IAPGW_DATABASE_URL"}}}"#.utf8),
            baseDirectory: "/tmp"
        )
        #expect(pg.postgresURLEnv == "IAPGW_DATABASE_URL")
        #expect(
            try GatewayConfig.parse(Array(#"{"store": {"sqlite": "g.db"}}"#.utf8), baseDirectory: "/tmp").postgresURLEnv
                == nil
        )
        #expect(throws: ConfigError.self) {
            try GatewayConfig.parse(
                Array(#"{"store": {"sqlite": "g.db", "postgres": {"url_env": "X"}}}"#.utf8),
                baseDirectory: "/tmp"
            )
        }
        #expect(throws: ConfigError.self) {
            try GatewayConfig.parse(Array(#"{"store": {"postgres": {}}}"#.utf8), baseDirectory: "/tmp")
        }
        #expect(throws: ConfigError.self) {
            try GatewayConfig.parse(
                Array(#"{"store": {"postgres": {"url": "postgresql://secret@host/db"}}}"#.utf8),
                baseDirectory: "/tmp"
            )
        }
    }

    @Test func theExampleConfigKeepsTheTenDayFreshnessWindow() throws {
        // It shipped 2000 days so that the demo's saved samples passed: a copied config switched freshness off.
        let example = Fixtures.root.deletingLastPathComponent().appending(path: "config/example.json").path()
        let c = try GatewayConfig.load(path: example)
        #expect(c.maxNotificationAgeMillis <= 10 * 86_400_000)
    }

    @Test func downstreamBackoffAndQuarantineBytesAreRead() throws {
        let c = try GatewayConfig.parse(
            Array(
                """
                {"limits": {"untrusted_quarantine_bytes": "8MiB", "genuine_quarantine_bytes": 536870912},
                 "downstreams": [{"name": "d", "url": "http://x", "retry_delay": "1s", "max_retry_delay": "30s"}]}
                """.utf8
            ),
            baseDirectory: "/"
        )
        #expect(c.limits.untrustedQuarantineBytes == 8 * 1_048_576 && c.limits.genuineQuarantineBytes == 536_870_912)
        #expect(c.downstreams.first?.retryDelayMillis == 1_000 && c.downstreams.first?.maxRetryDelayMillis == 30_000)
    }
}

/// `receipts.stale_wait`: 0s by default (a stale history answers at once), a duration up to `fetch_timeout`.
@Suite struct ReceiptStaleWaitConfigTests {
    static func config(_ receipts: String) -> String {
        #"{"listen": "127.0.0.1:8080", "store": {"sqlite": "g.db"}, "receipts": "# + receipts + "}"
    }

    @Test func itDefaultsToAtOnceAndTakesADurationUpToTheFetchTimeout() throws {
        #expect(try GatewayConfigTests.parse(Self.config("{}")).receiptSettings.staleWaitMillis == 0)
        #expect(
            try GatewayConfigTests.parse(Self.config(#"{"stale_wait": "500ms"}"#)).receiptSettings.staleWaitMillis
                == 500
        )
        #expect(
            try GatewayConfigTests.parse(Self.config(#"{"stale_wait": "0s"}"#)).receiptSettings.staleWaitMillis == 0
        )
        #expect(GatewayConfigTests.field(Self.config(#"{"stale_wait": "11s"}"#)) == "receipts.stale_wait")
        #expect(
            GatewayConfigTests.field(Self.config(#"{"stale_wait": "20s", "fetch_timeout": "30s"}"#)) == nil,
            "up to the fetch timeout given"
        )
        #expect(GatewayConfigTests.field(Self.config(#"{"stale_wait": "soon"}"#)) == "receipts.stale_wait")
    }
}
