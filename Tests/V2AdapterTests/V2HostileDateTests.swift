import Canonical
import Crypto
import FoundationEssentials
import TestSupport
import Testing
import V2Adapter

/// Dates at Int64's ends, in every place a V2 payload carries one, signed with the test PKI (so each date gets past
/// the signature to the arithmetic after it) and unsigned: verification answers a stable code or succeeds, and the
/// canonical mapping and entitlement of what succeeds are well defined. Before the fix `signedDate: Int64.min`
/// trapped in `AppleJWSVerifier.authenticate` (`(time - 999) / 1000`) and an extreme `now` in the freshness window.
@Suite struct V2HostileDateTests {
    static let now = TestPKI.now
    /// 2025-06-01: inside the test leaf's validity (2024 → 2030).
    static let goodDate: Int64 = 1_748_736_000_000
    static let extremes: [Int64] = [.min, .min + 1, -1_000, -1, 0, .max - 1, .max]

    static func adapter() throws -> V2Adapter {
        V2Adapter(verifier: AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple()), apps: TestPKI.apps)
    }

    /// `payload` signed by the standard test leaf under the standard header.
    static func signed(_ payload: String) throws -> String {
        String(
            decoding: try TestJWS.sign(
                headerJSON: try TestJWS.standardHeader(),
                payloadJSON: payload,
                key: try TestPKI.key("leaf")
            ),
            as: UTF8.self
        )
    }

    static func notification(signedDate: Int64?, data: String) -> String {
        let date = signedDate.map { ",\"signedDate\":\($0)" } ?? ""
        return """
            {"notificationType":"DID_RENEW","notificationUUID":"00000000-0000-4000-8000-0000000000aa","data":{\(data)},\
            "version":"2.0"\(date)}
            """
    }

    static let sandboxData = "\"bundleId\":\"com.example.gateway\",\"environment\":\"Sandbox\""

    static func transaction(_ members: String) -> String {
        """
        {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","bundleId":"com.example.gateway",\
        "productId":"com.example.monthly","type":"Auto-Renewable Subscription","environment":"Sandbox"\(members)}
        """
    }

    static func renewal(_ members: String) -> String {
        """
        {"originalTransactionId":"2000000000000001","productId":"com.example.monthly","environment":"Sandbox"\(members)}
        """
    }

    /// The code a verification fails with; nil when it succeeds. A trap ends the test process (a failure too).
    static func code(_ token: String, now: Int64 = now, freshness: V2Adapter.Freshness? = nil) throws -> String? {
        do {
            _ = try adapter().verifyNotification(signedPayload: Array(token.utf8), now: now, freshness: freshness)
            return nil
        } catch let e as V2AdapterError {
            return e.cause.map { "\(e.code)(\($0))" } ?? e.code.rawValue
        }
    }

    // MARK: the outer signedDate

    @Test(arguments: extremes)
    func signedOuterDateAtAnyExtremeIsRefusedAsOutsideTheChainsValidity(date: Int64) throws {
        let token = try Self.signed(Self.notification(signedDate: date, data: Self.sandboxData))
        for now in [Int64.min, -1, 0, Self.now, Int64.max] {
            #expect(try Self.code(token, now: now) == "certificate_expired", "signedDate \(date), now \(now)")
        }
    }

    @Test(arguments: extremes)
    func freshnessWindowNeverTrapsWhateverNowAndTheDateAre(date: Int64) throws {
        let token = try Self.signed(Self.notification(signedDate: date, data: Self.sandboxData))
        let windows = [
            V2Adapter.Freshness(), V2Adapter.Freshness(maxAgeMillis: .max, maxFutureMillis: .max),
            V2Adapter.Freshness(maxAgeMillis: 0, maxFutureMillis: 0),
        ]
        for now in [Int64.min, Int64.min + 1, -1, 0, Self.now, Int64.max - 1, Int64.max] {
            for freshness in windows {
                let code = try Self.code(token, now: now, freshness: freshness)
                #expect(
                    code == "stale_notification" || code == "certificate_expired",
                    "signedDate \(date), now \(now): \(code ?? "accepted")"
                )
            }
        }
    }

    @Test func freshnessStillJudgesGoodDatesAtExtremeNows() throws {
        let token = try Self.signed(Self.notification(signedDate: Self.goodDate, data: Self.sandboxData))
        let wide = V2Adapter.Freshness(maxAgeMillis: .max, maxFutureMillis: .max)
        // A window reaching past Int64's ends has no edge there: the good date is inside it from 0 or Int64.max…
        for now in [0, Int64.max] { #expect(try Self.code(token, now: now, freshness: wide) == nil, "now \(now)") }
        // …while from Int64.min even Int64.max ms into the future only reaches -1 (exactly, no clamping needed).
        #expect(try Self.code(token, now: .min, freshness: wide) == "stale_notification")
        // The default window refuses it from far away on either side.
        #expect(try Self.code(token, now: .max, freshness: .init()) == "stale_notification")
        #expect(try Self.code(token, now: .min, freshness: .init()) == "stale_notification")
        #expect(try Self.code(token, now: Self.goodDate, freshness: .init()) == nil)
    }

    @Test(arguments: extremes)
    func unsignedTamperedDateIsRefusedWithAStableCode(date: Int64) throws {
        // A genuine token whose payload was replaced: its signature covers other bytes.
        let genuine = try Self.signed(Self.notification(signedDate: Self.goodDate, data: Self.sandboxData))
        let parts = genuine.split(separator: ".")
        let forged =
            parts[0] + "."
            + Base64.encode(Array(Self.notification(signedDate: date, data: Self.sandboxData).utf8), alphabet: .url)
            + "." + parts[2]
        for freshness in [nil, V2Adapter.Freshness()] {
            for now in [Int64.min, Self.now, Int64.max] {
                let code = try Self.code(String(forged), now: now, freshness: freshness)
                #expect(
                    ["certificate_expired", "stale_notification", "bad_signature"].contains(code),
                    "\(date), \(now): \(code ?? "accepted")"
                )
            }
        }
    }

    // MARK: nested dates that choose the validation time

    @Test(arguments: extremes)
    func nestedSignedDatesAtAnyExtremeAreRefusedAsNested(date: Int64) throws {
        let tx = try Self.signed(Self.transaction(",\"signedDate\":\(date)"))
        let ri = try Self.signed(Self.renewal(",\"signedDate\":\(date)"))
        let withTx = try Self.signed(
            Self.notification(
                signedDate: Self.goodDate,
                data: Self.sandboxData + ",\"signedTransactionInfo\":\"\(tx)\""
            )
        )
        let withRi = try Self.signed(
            Self.notification(signedDate: Self.goodDate, data: Self.sandboxData + ",\"signedRenewalInfo\":\"\(ri)\"")
        )
        #expect(try Self.code(withTx) == "nested_jws_invalid(certificate_expired)")
        #expect(try Self.code(withRi) == "nested_jws_invalid(certificate_expired)")
    }

    @Test(arguments: extremes)
    func transactionDateStandingInForAMissingOuterSignedDateNeverTraps(date: Int64) throws {
        // No outer signedDate (early 2022): the nested transaction's dates the whole notification.
        let tx = try Self.signed(Self.transaction(",\"signedDate\":\(date)"))
        let token = try Self.signed(
            Self.notification(signedDate: nil, data: Self.sandboxData + ",\"signedTransactionInfo\":\"\(tx)\"")
        )
        for now in [Int64.min, Self.now, Int64.max] {
            for freshness in [nil, V2Adapter.Freshness()] {
                let code = try Self.code(token, now: now, freshness: freshness)
                #expect(
                    code == "certificate_expired" || code == "stale_notification",
                    "\(date), \(now): \(code ?? "accepted")"
                )
            }
        }
    }

    @Test(arguments: extremes)
    func appTransactionReceiptCreationDateStandingInForSignedDateNeverTraps(date: Int64) throws {
        // RESCIND_CONSENT: an app transaction without signedDate is validated at its receiptCreationDate.
        let app = try Self.signed(
            """
            {"receiptType":"Sandbox","bundleId":"com.example.gateway","receiptCreationDate":\(date),"originalPurchaseDate":\(date),\
            "preorderDate":\(date)}
            """
        )
        let token = try Self.signed(
            """
            {"notificationType":"RESCIND_CONSENT","notificationUUID":"00000000-0000-4000-8000-0000000000ab",\
            "appData":{"bundleId":"com.example.gateway","environment":"Sandbox","signedAppTransactionInfo":"\(app)"},\
            "version":"2.0","signedDate":\(Self.goodDate)}
            """
        )
        #expect(try Self.code(token) == "nested_jws_invalid(certificate_expired)")
    }

    // MARK: dates that pass verification and reach the canonical mapping

    @Test(arguments: extremes)
    func extremeTransactionAndRenewalDatesMapToAWellDefinedEvent(date: Int64) throws {
        let tx = try Self.signed(
            Self.transaction(
                """
                ,"signedDate":\(Self.goodDate),"purchaseDate":\(date),"originalPurchaseDate":\(date),"expiresDate":\(date),\
                "price":\(date),"quantity":\(date),"offerType":\(date),"offerDiscountType":"FREE_TRIAL",\
                "revocationReason":\(date),"revocationPercentage":\(date),"currency":"USD"
                """
            )
        )
        let ri = try Self.signed(
            Self.renewal(
                """
                ,"signedDate":\(Self.goodDate),"gracePeriodExpiresDate":\(date),"renewalDate":\(date),"recentSubscriptionStartDate":\(date),\
                "renewalPrice":\(date),"expirationIntent":\(date),"autoRenewStatus":\(date),"priceIncreaseStatus":\(date),"offerType":\(date),\
                "isInBillingRetryPeriod":true
                """
            )
        )
        let token = try Self.signed(
            Self.notification(
                signedDate: Self.goodDate,
                data: Self.sandboxData + ",\"signedTransactionInfo\":\"\(tx)\",\"signedRenewalInfo\":\"\(ri)\""
            )
        )
        let verified = try Self.adapter().verifyNotification(signedPayload: Array(token.utf8), now: Self.now)
        let events = verified.canonicalEvents()
        let e = try #require(events.first)
        #expect(events.count == 1)
        #expect(
            e.expiresDate == date && e.purchaseDate == date && e.priceMilli == date && e.gracePeriodExpiresDate == date
        )
        #expect(e.revocationDate == nil)
        let entitlement = try #require(e.entitlement)
        // From the dates alone: a period ending after the event is active until then; otherwise the grace period
        // (same date) cannot run either, and Apple is still retrying.
        if date > Self.goodDate {
            #expect(entitlement == Entitlement(state: .active, until: date))
        } else {
            #expect(entitlement == Entitlement(state: .billingRetry, until: nil))
        }
        for t in [Int64.min, -1, 0, Self.goodDate, Int64.max] { _ = entitlement.projected(at: t) }
        _ = try JSONEncoder().encode(e)
    }

    @Test(arguments: extremes)
    func extremeRevocationDateStillRevokes(date: Int64) throws {
        let tx = try Self.signed(
            Self.transaction(",\"signedDate\":\(Self.goodDate),\"expiresDate\":\(Int64.max),\"revocationDate\":\(date)")
        )
        let token = try Self.signed(
            Self.notification(
                signedDate: Self.goodDate,
                data: Self.sandboxData + ",\"signedTransactionInfo\":\"\(tx)\""
            )
        )
        let e = try #require(
            try Self.adapter().verifyNotification(signedPayload: Array(token.utf8), now: Self.now).canonicalEvents()
                .first
        )
        #expect(e.entitlement == Entitlement(state: .revoked, until: nil))
    }

    @Test(arguments: extremes)
    func bareTokensWithExtremeSignedDatesAreRefusedNotTrapped(date: Int64) throws {
        let adapter = try Self.adapter()
        let tx = try Self.signed(Self.transaction(",\"signedDate\":\(date)"))
        let ri = try Self.signed(Self.renewal(",\"signedDate\":\(date)"))
        for now in [Int64.min, Self.now, Int64.max] {
            #expect(throws: V2AdapterError(.certificateExpired, "")) {
                try adapter.verifyTransaction(Array(tx.utf8), now: now)
            }
            #expect(throws: V2AdapterError(.certificateExpired, "")) {
                try adapter.verifyRenewalInfo(Array(ri.utf8), now: now)
            }
        }
        // Without a signedDate, `now` is the validation time: any `now` is judged, none traps.
        let undated = try Self.signed(Self.transaction(""))
        for now in [Int64.min, -1, Int64.max] {
            #expect(throws: V2AdapterError(.certificateExpired, "")) {
                try adapter.verifyTransaction(Array(undated.utf8), now: now)
            }
        }
        _ = try adapter.verifyTransaction(Array(undated.utf8), now: Self.goodDate)
    }
}
