import Canonical
import FoundationEssentials
import Testing
import V1Adapter
import WireJSON

/// V1 bodies are unsigned: every number in them is whatever the sender wrote. Dates at Int64's ends (as `_ms`
/// numbers or text), text dates in years no timestamp reaches, and huge counts must give nil or a well-defined
/// event, never a trap. Before the fix `AppleDateText.millis` overflowed in its days-from-civil and `* 1000` for
/// years like 99999999999, and DID_CHANGE_RENEWAL_STATUS computed `abs(start - time)` on two such dates.
@Suite struct V1HostileNumberTests {
    static let arrival: Int64 = 1_748_736_000_000

    @Test(arguments: [
        "99999999999-01-01 00:00:00 Etc/GMT", "9223372036854775807-12-31 23:59:59 Etc/GMT",
        "292278995-01-01 00:00:00 Etc/GMT", "300000001-01-01 00:00:00 GMT", "292278994-12-31 23:59:59 UTC",
    ])
    func textDatesBeyondWhatMillisecondsHoldAreNotDates(_ text: String) {
        #expect(AppleDateText.millis(text) == nil)
    }

    @Test func textDatesAtTheEdgeOfMillisecondsStillRead() {
        // 292278994-08-17 07:12:55 UTC is the last whole second Int64 milliseconds hold.
        #expect(AppleDateText.millis("292278994-08-17 07:12:55 Etc/GMT") == 9_223_372_036_854_775_000)
        #expect(AppleDateText.millis("0000-01-01 00:00:00 Etc/GMT") == -62_167_219_200_000)
        #expect(AppleDateText.millis("2019-11-24 17:42:49 Etc/GMT") == 1_574_617_369_000)
        #expect(AppleDateText.millis("2019-13-24 17:42:49 Etc/GMT") == nil)
        #expect(AppleDateText.millis("2019-11-24 17:42:61 Etc/GMT") == nil)
    }

    static let extremes: [String] = [
        "\"-9223372036854775808\"", "\"9223372036854775807\"", "-9223372036854775808", "9223372036854775807", "\"-1\"",
        "0",
        "\"99999999999-01-01 00:00:00 Etc/GMT\"", "1e999", "-0", "\"\"",
    ]

    /// A pre-2021 body of `type` with every date and count set to `v` (two transactions of one subscription, so
    /// the types that compare the latest with the previous one get that far).
    static func body(type: String, value v: String) -> [UInt8] {
        func transaction(_ id: String) -> String {
            """
            {"original_transaction_id":"1000","transaction_id":"\(id)","product_id":"p","bid":"com.example.gateway",\
            "purchase_date_ms":\(v),"purchase_date":\(v),"expires_date":\(v),"expires_date_ms":\(v),\
            "expires_date_formatted":\(v),"original_purchase_date_ms":\(v),"cancellation_date_ms":\(v),\
            "cancellation_reason":\(v),"quantity":\(v),"app_item_id":\(v),"is_upgraded":"true","is_trial_period":\(v)}
            """
        }
        return Array(
            """
            {"notification_type":"\(type)","password":"secret","environment":"PROD","auto_renew_status":"true",\
            "auto_renew_status_change_date_ms":\(v),"auto_renew_status_change_date":\(v),"expiration_intent":\(v),\
            "is_in_billing_retry_period":\(v),"auto_renew_product_id":"q","original_transaction_id":"1000",\
            "latest_receipt_info":[\(transaction("1")),\(transaction("2"))],\
            "unified_receipt":{"environment":"Production","latest_receipt_info":[\(transaction("3"))],\
            "pending_renewal_info":[{"original_transaction_id":"1000","auto_renew_status":"1","expiration_intent":\(v),\
            "grace_period_expires_date_ms":\(v),"grace_period_expires_date":\(v),"is_in_billing_retry_period":\(v),\
            "price_consent_status":\(v)}],"status":0}}
            """.utf8
        )
    }

    static let types = [
        "INITIAL_BUY", "DID_RENEW", "DID_RECOVER", "RENEWAL", "INTERACTIVE_RENEWAL", "DID_CHANGE_RENEWAL_PREF",
        "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "CANCEL", "REFUND", "REVOKE", "PRICE_INCREASE_CONSENT",
        "CONSUMPTION_REQUEST", "SOMETHING_NEW",
    ]

    @Test(arguments: extremes)
    func everyV1TypeBuildsAWellDefinedEventFromHostileNumbers(_ value: String) throws {
        let adapter = V1Adapter(apps: [
            V1App(
                bundleID: "com.example.gateway",
                environments: [.production],
                sharedSecrets: [SharedSecret(name: "S", value: "secret")],
                verifyReceipt: false
            )
        ])
        for type in Self.types {
            let n = try adapter.authenticate(body: Self.body(type: type, value: value))
            for arrival in [Int64.min, 0, Self.arrival, Int64.max] {
                let facts = V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID)
                let e = V1EventBuilder().event(for: n.body, id: n.eventID, facts: facts, arrival: arrival)
                #expect(e.eventDate <= arrival, "\(type) \(value)")
                _ = e.entitlement?.projected(at: .max)
                _ = try JSONEncoder().encode(e)
            }
        }
    }

    @Test func resubscriptionCheckComparesDatesAtOppositeEndsWithoutOverflow() throws {
        // Latest purchase at Int64.max, auto-renew changed at Int64.min: the distance between the two is 2^64 - 1.
        var previous = V1Transaction()
        (previous.originalTransactionID, previous.transactionID, previous.purchaseDateMs, previous.expiresDateMs) = (
            "1", "10", "0", "0"
        )
        var latest = V1Transaction()
        (latest.originalTransactionID, latest.transactionID, latest.purchaseDateMs, latest.expiresDateMs) =
            ("1", "11", "9223372036854775807", "9223372036854775807")
        var body = ResponseBodyV1(notificationType: "DID_CHANGE_RENEWAL_STATUS", password: nil, environment: "PROD")
        body.autoRenewStatus = "true"
        body.autoRenewStatusChangeDateMs = "-9223372036854775808"
        let facts = V1EventBuilder.Facts(
            transactions: [previous, latest],
            pendingRenewal: nil,
            environment: .production,
            bundleID: "b",
            verified: true
        )
        let e = V1EventBuilder().event(for: body, id: "v1:x", facts: facts, arrival: Self.arrival)
        #expect(e.eventDate == Int64.min)
        #expect(e.kind == .autoRenewChanged && e.reason == .enabled)
        // The same shape two minutes apart is Apple's resubscription.
        body.autoRenewStatusChangeDateMs = "9223372036854715807"
        let near = V1EventBuilder().event(for: body, id: "v1:x", facts: facts, arrival: .max)
        #expect(near.kind == .purchase && near.reason == .resubscribe)
    }

    @Test func receiptSnapshotsWithHostileNumbersAreWellDefined() throws {
        for value in Self.extremes {
            let answer = Array(
                """
                {"status":0,"environment":"Production","receipt":{"bundle_id":"b","adam_id":\(value),"request_date_ms":\(value),\
                "in_app":[{"original_transaction_id":"1","transaction_id":"1","purchase_date_ms":\(value),"expires_date_ms":\(value),\
                "cancellation_date_ms":\(value),"quantity":\(value)}]},\
                "pending_renewal_info":[{"original_transaction_id":"1","expiration_intent":\(value),"auto_renew_status":\(value),\
                "grace_period_expires_date_ms":\(value)}]}
                """.utf8
            )
            let r = try JSONValueDecoder().decode(VerifyReceiptResponse.self, from: answer)
            for observed in [Int64.min, 0, Int64.max] {
                let snapshots = V1EventBuilder.snapshots(from: r, observedAt: observed)
                // The answer's one subscription, whatever its numbers say …
                #expect(snapshots.map(\.originalTransactionID) == ["1"], "\(value) at \(observed)")
                for s in snapshots {
                    // … with the access its own dates give at the time observed, ending after that time if at all,
                    // so that projecting it to that time changes nothing.
                    let expected = Entitlement.compute(
                        expiresDate: s.expiresDate,
                        revocationDate: s.revocationDate,
                        gracePeriodExpiresDate: s.gracePeriodExpiresDate,
                        inBillingRetry: s.inBillingRetry,
                        at: observed
                    )
                    #expect(s.entitlement == expected, "\(value) at \(observed)")
                    #expect(
                        s.entitlement.until.map { $0 > observed } ?? true,
                        "\(value) at \(observed): \(s.entitlement)"
                    )
                    #expect(s.entitlement.projected(at: observed) == s.entitlement, "\(value) at \(observed)")
                }
            }
        }
    }
}
