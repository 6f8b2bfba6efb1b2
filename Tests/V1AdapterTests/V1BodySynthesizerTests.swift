import Canonical
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// The V1 shape of a V2 notification: the reverse mapping, each type's body read back by the V1 adapter into the
/// event it came from, and the keys and JSON types of Apple's own V1 bodies.
@Suite struct V1BodySynthesizerTests {
    static let secret = SharedSecret(name: "APP_SHARED_SECRET", value: "0123456789abcdef0123456789abcdef")
    /// The app as the opted-out path sees it: events from the body alone.
    static let app = V1App(
        bundleID: Story.bundle,
        environments: [.production, .sandbox],
        sharedSecrets: [secret],
        verifyReceipt: false
    )
    static let marker = V1Adapter.secretMarker(secret.name)

    // MARK: The reverse mapping

    /// Every V2 type and subtype Apple documents (`notificationType`, `subtype`) and the V1 type Apple's V1 event table
    /// has for the same event, nil where V1 had none.
    static let mapping: [(String, String?, String?)] = [
        ("SUBSCRIBED", "INITIAL_BUY", "INITIAL_BUY"),
        ("SUBSCRIBED", "RESUBSCRIBE", "INTERACTIVE_RENEWAL"),
        ("OFFER_REDEEMED", "INITIAL_BUY", "INITIAL_BUY"),
        ("OFFER_REDEEMED", "RESUBSCRIBE", "INTERACTIVE_RENEWAL"),
        ("OFFER_REDEEMED", "UPGRADE", "INTERACTIVE_RENEWAL"),
        ("OFFER_REDEEMED", "DOWNGRADE", nil),
        ("OFFER_REDEEMED", nil, nil),
        ("DID_RENEW", nil, "DID_RENEW"),
        ("DID_RENEW", "BILLING_RECOVERY", "DID_RECOVER"),
        ("DID_CHANGE_RENEWAL_PREF", "UPGRADE", "INTERACTIVE_RENEWAL"),
        ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", "DID_CHANGE_RENEWAL_PREF"),
        ("DID_CHANGE_RENEWAL_PREF", nil, "DID_CHANGE_RENEWAL_PREF"),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", "DID_CHANGE_RENEWAL_STATUS"),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "DID_CHANGE_RENEWAL_STATUS"),
        ("DID_CHANGE_RENEWAL_STATUS", nil, "DID_CHANGE_RENEWAL_STATUS"),
        ("DID_FAIL_TO_RENEW", nil, "DID_FAIL_TO_RENEW"),
        ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", "DID_FAIL_TO_RENEW"),
        ("GRACE_PERIOD_EXPIRED", nil, nil),
        ("EXPIRED", "VOLUNTARY", nil),
        ("EXPIRED", "BILLING_RETRY", "DID_CHANGE_RENEWAL_STATUS"),
        ("EXPIRED", "PRICE_INCREASE", "DID_CHANGE_RENEWAL_STATUS"),
        ("EXPIRED", "PRODUCT_NOT_FOR_SALE", nil),
        ("EXPIRED", nil, nil),
        ("PRICE_INCREASE", "PENDING", "PRICE_INCREASE_CONSENT"),
        ("PRICE_INCREASE", "ACCEPTED", nil),
        ("REFUND", nil, "CANCEL"),
        ("REFUND_DECLINED", nil, nil),
        ("REFUND_REVERSED", nil, nil),
        ("CONSUMPTION_REQUEST", nil, "CONSUMPTION_REQUEST"),
        ("RENEWAL_EXTENDED", nil, nil),
        ("RENEWAL_EXTENSION", "SUMMARY", nil),
        ("RENEWAL_EXTENSION", "FAILURE", nil),
        ("REVOKE", nil, "REVOKE"),
        ("TEST", nil, nil),
        ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", nil),
        ("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER", nil),
        ("EXTERNAL_PURCHASE_TOKEN", "CREATED", nil),
        ("ONE_TIME_CHARGE", nil, nil),
        ("RESCIND_CONSENT", nil, nil),
        ("METADATA_UPDATE", nil, nil),
        ("MIGRATION", nil, nil),
        ("PRICE_CHANGE", nil, nil),
        // Values this build does not know: nil where the subtype decides the V1 type, the type's counterpart elsewhere.
        ("SUBSCRIBED", "SOMETHING_NEW", nil),
        ("DID_CHANGE_RENEWAL_PREF", "SOMETHING_NEW", nil),
        ("PRICE_INCREASE", nil, nil),
        ("DID_RENEW", "SOMETHING_NEW", "DID_RENEW"),
        ("DID_CHANGE_RENEWAL_STATUS", "SOMETHING_NEW", "DID_CHANGE_RENEWAL_STATUS"),
        ("SOMETHING_NEW", nil, nil),
    ]

    @Test func reverseMappingFollowsApplesTables() {
        for (type, subtype, v1) in Self.mapping {
            #expect(
                V1BodySynthesizer.v1NotificationType(v2Type: type, subtype: subtype) == v1,
                "\(type)/\(subtype ?? "-")"
            )
        }
    }

    /// Every V1 type a V2 notification's V1 shape takes is one of Apple's (``NotificationTypeV1``, what a
    /// downstream's `filter.types` may name).
    @Test func everyShapesTypeIsOneOfApplesV1Types() {
        let v2 = [
            "SUBSCRIBED", "OFFER_REDEEMED", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS",
            "EXPIRED", "DID_FAIL_TO_RENEW", "REFUND", "REVOKE", "PRICE_INCREASE", "CONSUMPTION_REQUEST",
        ]
        let subtypes: [String?] = [
            nil, "INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE", "BILLING_RECOVERY",
            "BILLING_RETRY", "PRICE_INCREASE", "PENDING",
        ]
        var seen: Set<String> = []
        for type in v2 {
            for subtype in subtypes {
                for renewable in [true, false] {
                    let v1 = V1BodySynthesizer.v1NotificationType(
                        v2Type: type,
                        subtype: subtype,
                        autoRenewable: renewable
                    )
                    if let v1 { seen.insert(v1) }
                }
            }
        }
        #expect(
            !seen.isEmpty && seen.isSubset(of: NotificationTypeV1.all),
            "\(seen.subtracting(NotificationTypeV1.all))"
        )
    }

    @Test func aRefundIsCancelForASubscriptionAndRefundForAnyOtherProduct() {
        #expect(V1BodySynthesizer.v1NotificationType(v2Type: "REFUND", subtype: nil, autoRenewable: true) == "CANCEL")
        #expect(V1BodySynthesizer.v1NotificationType(v2Type: "REFUND", subtype: nil, autoRenewable: false) == "REFUND")
        var event = Story.refundOfALifetimeUnlock
        #expect(V1BodySynthesizer.v1NotificationType(for: event) == "REFUND")
        event.productType = nil
        #expect(V1BodySynthesizer.v1NotificationType(for: event) == "REFUND", "no type, no expiry: not a subscription")
        event.expiresDate = Story.t0 + Story.month
        #expect(V1BodySynthesizer.v1NotificationType(for: event) == "CANCEL", "no type, an expiry: a subscription")
        event.productType = .nonRenewing
        #expect(V1BodySynthesizer.v1NotificationType(for: event) == "REFUND")
    }

    static let withoutCounterpart = mapping.filter { $0.2 == nil }.map { "\($0.0)/\($0.1 ?? "")" }

    @Test(arguments: withoutCounterpart)
    func typesWithoutACounterpartGiveNoBody(_ pair: String) {
        let parts = pair.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var event = Story.buy
        event.rawType = parts[0]
        event.rawSubtype = parts[1].isEmpty ? nil : parts[1]
        #expect(V1BodySynthesizer.v1NotificationType(for: event) == nil)
        #expect(
            V1BodySynthesizer.body(
                for: event,
                history: [],
                latestReceipt: "x",
                password: Self.marker,
                bundleVersion: "1"
            ) == nil
        )
    }

    @Test func anEventWithoutATransactionGivesNoBody() {
        var event = Story.buy
        event.transactionID = nil
        #expect(
            V1BodySynthesizer.body(
                for: event,
                history: [],
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            ) == nil
        )
    }

    // MARK: Read back by the V1 adapter

    /// The body of `scenario`, through the delivery (the marker replaced by the secret), authenticated, and read from
    /// the body alone as the opted-out path does, dated as the V2 notification.
    static func readBack(
        _ s: Story.Scenario,
        latestReceipt: String? = "c3ludGhldGljLXJlY2VpcHQ="
    )
        throws -> (body: [UInt8], event: CanonicalEvent)
    {
        let body = try #require(
            V1BodySynthesizer.body(
                for: s.event,
                history: s.history,
                latestReceipt: latestReceipt,
                password: marker,
                bundleVersion: "42"
            )
        )
        let delivered = try #require(
            V1Adapter.restore(redactedBody: body, secrets: [secret]),
            "the delivery finds the marker"
        )
        let n = try V1Adapter(apps: [app]).authenticate(body: delivered)
        #expect(n.secretName == secret.name)
        #expect(n.redactedBody == body, "authenticating what is delivered gives back the synthesized bytes")
        let facts = V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID)
        return (body, V1EventBuilder().event(for: n.body, id: n.eventID, facts: facts, arrival: s.event.eventDate))
    }

    @Test(arguments: Story.scenarios)
    func everyTypeWithACounterpartReadsBackAsTheSameEvent(_ s: Story.Scenario) throws {
        let (body, v1) = try Self.readBack(s)
        let object = try #require(try JSONParser.parse(body).objectValue)
        #expect(object["notification_type"]?.stringValue == s.v1Type)
        #expect(object["password"]?.stringValue == Self.marker)
        #expect(V1BodySynthesizer.v1NotificationType(for: s.event) == s.v1Type)

        let v2 = s.event
        #expect(v1.kind == v2.kind, "\(s.name)")
        #expect(v1.reason == v2.reason, "\(s.name)")
        #expect(v1.entitlement == v2.entitlement, "\(s.name): state and until")
        #expect(v1.expiresDate == v2.expiresDate, "\(s.name)")
        #expect(v1.rawType == s.v1Type && v1.source == .v1 && !v1.verified)
        // What V1 can carry comes back as it went.
        #expect(v1.bundleID == v2.bundleID && v1.environment == v2.environment)
        #expect(
            v1.productID == v2.productID && v1.originalTransactionID == v2.originalTransactionID
                && v1.transactionID == v2.transactionID
        )
        #expect(v1.webOrderLineItemID == v2.webOrderLineItemID && v1.subscriptionGroupID == v2.subscriptionGroupID)
        #expect(v1.purchaseDate == v2.purchaseDate && v1.originalPurchaseDate == v2.originalPurchaseDate)
        #expect(v1.revocationDate == v2.revocationDate && v1.gracePeriodExpiresDate == v2.gracePeriodExpiresDate)
        if v2.revocationReason != nil { #expect(v1.revocationReason == v2.revocationReason) }
        #expect(v1.autoRenew == v2.autoRenew && v1.autoRenewProductID == v2.autoRenewProductID)
        #expect(v1.expirationIntent == v2.expirationIntent && v1.inBillingRetry == v2.inBillingRetry)
        #expect(v1.offerType == v2.offerType && v1.offerID == v2.offerID && v1.isTrial == v2.isTrial)
        #expect(
            v1.isIntro == (v2.isIntro == true && v2.isTrial != true),
            "V1 has a trial or an introductory price, not both"
        )
        #expect(v1.quantity == v2.quantity && v1.ownership == v2.ownership && v1.appAccountToken == v2.appAccountToken)
    }

    /// Apple's V1 writes numbers and booleans as strings; the one number is `unified_receipt.status` (0).
    @Test(arguments: Story.scenarios)
    func everyValueIsAStringAsInApplesV1(_ s: Story.Scenario) throws {
        let (body, _) = try Self.readBack(s)
        func walk(_ value: JSONValue, _ path: String) {
            switch value {
            case .object(let o): for (key, member) in o { walk(member, path + "." + key) }
            case .array(let items): for item in items { walk(item, path + "[]") }
            case .string: break
            case .number(let n): #expect(path == ".unified_receipt.status" && n == "0", "\(s.name): \(path)")
            case .bool, .null: Issue.record("\(s.name): \(path) is \(value)")
            }
        }
        walk(try JSONParser.parse(body), "")
    }

    @Test func writesTheTypesDateMembersInAppleFormats() throws {
        let off = try #require(Story.scenarios.first { $0.name == "auto-renew-off" })
        let o = try #require(try JSONParser.parse(try Self.readBack(off).body).objectValue)
        let at = off.event.eventDate
        #expect(o["auto_renew_status_change_date_ms"]?.stringValue == String(at))
        #expect(o["auto_renew_status_change_date"]?.stringValue == AppleDateText.gmt(at))
        #expect(o["auto_renew_status_change_date_pst"]?.stringValue == AppleDateText.pst(at))
        #expect(o["auto_renew_status"]?.stringValue == "false")
        #expect(o["expiration_intent"]?.stringValue == "1")

        let refund = try #require(Story.scenarios.first { $0.name == "refund-subscription" })
        let r = try #require(try JSONParser.parse(try Self.readBack(refund).body).objectValue)
        let revoked = try #require(refund.event.revocationDate)
        #expect(r["cancellation_date_ms"]?.stringValue == String(revoked))
        #expect(r["cancellation_date_pst"]?.stringValue == AppleDateText.pst(revoked))
        let entry = try #require(
            r["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue?.first?.objectValue
        )
        #expect(entry["cancellation_reason"]?.stringValue == "1")
        #expect(entry["cancellation_date"]?.stringValue == AppleDateText.gmt(revoked))

        let grace = try #require(Story.scenarios.first { $0.name == "billing-failure-grace" })
        let g = try #require(try JSONParser.parse(try Self.readBack(grace).body).objectValue)
        let pending = try #require(
            g["unified_receipt"]?.objectValue?["pending_renewal_info"]?.arrayValue?.first?.objectValue
        )
        let graceEnd = try #require(grace.event.gracePeriodExpiresDate)
        #expect(pending["grace_period_expires_date_ms"]?.stringValue == String(graceEnd))
        #expect(pending["grace_period_expires_date_pst"]?.stringValue == AppleDateText.pst(graceEnd))
        #expect(pending["is_in_billing_retry_period"]?.stringValue == "1")
        #expect(pending["auto_renew_status"]?.stringValue == "1")
        #expect(pending["expiration_intent"]?.stringValue == "2")
        #expect(g["environment"]?.stringValue == "PROD")
        #expect(g["unified_receipt"]?.objectValue?["environment"]?.stringValue == "Production")

        let sandbox = try #require(Story.scenarios.first { $0.name == "initial-buy-sandbox" })
        let s = try #require(try JSONParser.parse(try Self.readBack(sandbox).body).objectValue)
        #expect(s["environment"]?.stringValue == "Sandbox")
        #expect(s["unified_receipt"]?.objectValue?["environment"]?.stringValue == "Sandbox")
        #expect(s["bvrs"]?.stringValue == "42" && s["bid"]?.stringValue == Story.bundle)
    }

    @Test func withoutAStoredReceiptLatestReceiptIsEmptyAndNoReceiptIsRead() throws {
        let (body, event) = try Self.readBack(Story.scenarios[0], latestReceipt: nil)
        let o = try #require(try JSONParser.parse(body).objectValue)
        #expect(o["unified_receipt"]?.objectValue?["latest_receipt"] == .string(""))
        let decoded = try JSONValueDecoder().decode(ResponseBodyV1.self, from: body)
        #expect(decoded.receiptData == nil, "an empty latest_receipt is no receipt to verify")
        #expect(event.entitlement?.state == .active)
        let withReceipt = try JSONValueDecoder().decode(
            ResponseBodyV1.self,
            from: try Self.readBack(Story.scenarios[0]).body
        )
        #expect(withReceipt.receiptData == "c3ludGhldGljLXJlY2VpcHQ=")
        let noVersion = try #require(
            V1BodySynthesizer.body(
                for: Story.buy,
                history: [],
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
        )
        #expect(try JSONParser.parse(noVersion).objectValue?["bvrs"] == nil)
    }

    // MARK: latest_receipt_info

    static func transactionIDs(_ body: [UInt8]) throws -> [String] {
        let items = try #require(
            try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue
        )
        return items.compactMap { $0.objectValue?["transaction_id"]?.stringValue }
    }

    @Test func latestReceiptInfoIsNewestFirstEachTransactionOnceAtMostAHundred() throws {
        // 150 monthly periods; the notification is about the 141st; another subscription's event and a newer, stale
        // view of the notification's own transaction are in the history too.
        let periods = (0..<150).map { i in Story.renewal(i) }
        let notification = periods[140]
        var stale = notification
        stale.revocationDate = Story.t0
        stale.eventDate = notification.eventDate
        var other = periods[120]
        other.originalTransactionID = "9999"
        other.transactionID = "9999"
        let history = periods.filter { $0.transactionID != notification.transactionID } + [stale, other]
        let body = try #require(
            V1BodySynthesizer.body(
                for: notification,
                history: Array(history.reversed()),
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
        )
        let ids = try Self.transactionIDs(body)
        #expect(ids.count == V1BodySynthesizer.maxTransactions)
        #expect(Set(ids).count == ids.count, "each transaction once")
        #expect(!ids.contains("9999"), "only the notification's subscription")
        #expect(ids.first == notification.transactionID, "the notification's transaction, the newest at its moment")
        #expect(
            Array(ids.dropFirst()) == periods[41..<140].reversed().map { $0.transactionID ?? "" },
            "the 99 before it, newest first; none bought after it"
        )
        let object = try #require(try JSONParser.parse(body).objectValue)
        let own = try #require(
            object["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue?.first?.objectValue
        )
        #expect(own["cancellation_date"] == nil, "the notification's own view of its transaction wins")
        #expect(
            V1BodySynthesizer.body(
                for: notification,
                history: history,
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
                == body,
            "the history's order does not matter"
        )
    }

    @Test func aBodyBuiltLateIsTrueToItsNotificationsMoment() throws {
        // The notification is about the 11th period; the body is built (a retried delivery, a replay) after 139 more
        // renewals and a refund of an earlier period dated after the notification.
        let periods = (0..<150).map { i in Story.renewal(i) }
        let notification = periods[10]
        var laterRefund = periods[5]
        laterRefund.eventDate = periods[20].eventDate
        laterRefund.revocationDate = laterRefund.eventDate
        let history = periods.filter { $0.transactionID != notification.transactionID } + [laterRefund]
        let body = try #require(
            V1BodySynthesizer.body(
                for: notification,
                history: history,
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
        )
        let ids = try Self.transactionIDs(body)
        #expect(ids == periods[0...10].reversed().map { $0.transactionID ?? "" })
        let entries = try #require(
            try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue
        )
        #expect(
            entries.allSatisfy { $0.objectValue?["cancellation_date_ms"] == nil },
            "a refund dated after the notification is not in its body"
        )
    }

    @Test func theNewestEventsViewOfAnEarlierTransactionIsWritten() throws {
        var refunded = Story.buy
        refunded.eventDate = Story.t0 + 5 * Story.day
        refunded.revocationDate = Story.t0 + 5 * Story.day
        var reversed = refunded
        reversed.eventDate = Story.t0 + 6 * Story.day
        reversed.revocationDate = nil
        let renew = Story.renewal(1)
        for history in [[Story.buy, refunded, reversed], [reversed, refunded, Story.buy]] {
            let body = try #require(
                V1BodySynthesizer.body(
                    for: renew,
                    history: history,
                    latestReceipt: nil,
                    password: Self.marker,
                    bundleVersion: nil
                )
            )
            let entries = try #require(
                try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["latest_receipt_info"]?
                    .arrayValue
            )
            #expect(entries.count == 2)
            #expect(entries.last?.objectValue?["cancellation_date_ms"] == nil, "the reversal is newer than the refund")
        }
    }

    @Test func aPeriodCutShortByAnotherProductIsMarkedUpgraded() throws {
        let upgrade = try #require(Story.scenarios.first { $0.name == "upgrade" })
        let body = try #require(
            V1BodySynthesizer.body(
                for: upgrade.event,
                history: upgrade.history,
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
        )
        let entries = try #require(
            try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue
        )
        #expect(
            entries.map { $0.objectValue?["is_upgraded"]?.stringValue } == [nil, "true"],
            "the old monthly period, not the new one"
        )
        let renew = try #require(Story.scenarios.first { $0.name == "did-renew" })
        let plain = try #require(
            V1BodySynthesizer.body(
                for: renew.event,
                history: renew.history,
                latestReceipt: nil,
                password: Self.marker,
                bundleVersion: nil
            )
        )
        #expect(
            !String(decoding: plain, as: UTF8.self).contains("is_upgraded"),
            "a renewal starts when the period ends"
        )
    }

    @Test func aPendingPriceIncreaseIsInTheRenewalInfoUntilTheNextPeriod() throws {
        let pending = try #require(Story.scenarios.first { $0.name == "price-increase-pending" })
        func consent(_ event: CanonicalEvent, _ history: [CanonicalEvent]) throws -> String? {
            let body = try #require(
                V1BodySynthesizer.body(
                    for: event,
                    history: history,
                    latestReceipt: nil,
                    password: Self.marker,
                    bundleVersion: nil
                )
            )
            let info = try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["pending_renewal_info"]?
                .arrayValue
            return info?.first?.objectValue?["price_consent_status"]?.stringValue
        }
        #expect(try consent(pending.event, pending.history) == "0")
        var accepted = pending.event
        accepted.rawSubtype = "ACCEPTED"
        accepted.reason = .accepted
        accepted.eventDate += Story.day
        var off = Story.buy
        off.rawType = "DID_CHANGE_RENEWAL_STATUS"
        off.rawSubtype = "AUTO_RENEW_DISABLED"
        off.eventDate = accepted.eventDate + Story.day
        #expect(try consent(off, [Story.buy, pending.event, accepted]) == "1")
        #expect(try consent(off, [Story.buy, pending.event]) == "0")
        #expect(try consent(off, [Story.buy]) == nil)
        var renewed = Story.renewal(1)
        renewed.eventDate = Story.t0 + Story.month
        #expect(
            try consent(renewed, [Story.buy, pending.event, accepted]) == nil,
            "the new period's price is the price"
        )
    }

    // MARK: Apple's real bodies

    /// The V2 notification a real V1 body's event stands for, by its V1 type.
    static let v2ForV1: [String: (String, String?)] = [
        "INITIAL_BUY": ("SUBSCRIBED", "INITIAL_BUY"),
        "DID_RECOVER": ("DID_RENEW", "BILLING_RECOVERY"),
        // RENEWAL: not sent since 2021-03-10; DID_RECOVER replaced it (Apple's `notification_type` documentation).
        "RENEWAL": ("DID_RENEW", "BILLING_RECOVERY"),
        "DID_CHANGE_RENEWAL_STATUS": ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"),
        "DID_CHANGE_RENEWAL_PREF": ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"),
        "CANCEL": ("REFUND", nil),
        "REFUND": ("REFUND", nil),
    ]

    /// Top-level members only Apple's pre-2021 shape has, removed on 2021-03-10 (Apple's `responseBodyV1`
    /// documentation): their content is in `unified_receipt`, which modern bodies carry and the synthesized one does.
    static let preUnifiedMembers: Set<String> = [
        "latest_receipt", "latest_receipt_info", "latest_expired_receipt", "latest_expired_receipt_info",
    ]

    static let realBodies = Fixtures.names(in: "v1").filter { $0.hasPrefix("v1-notif-") }

    static func jsonType(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Every member of `real` is in `synthesized` with the same JSON type, except `skipping`.
    static func conforms(
        _ synthesized: JSONObject,
        to real: JSONObject,
        skipping: (String, JSONValue) -> Bool = { _, _ in false },
        _ place: String
    ) {
        for (key, value) in real where !skipping(key, value) {
            let mine = synthesized[key]
            #expect(mine != nil, "\(place): \(key) is missing")
            if let mine {
                #expect(
                    jsonType(mine) == jsonType(value),
                    "\(place): \(key) is \(jsonType(mine)), Apple's \(jsonType(value))"
                )
            }
        }
    }

    /// For each real V1 notification: its facts (read by the V1 adapter) as the canonical event of the V2 notification
    /// that stands for it, synthesized back into a V1 body — which must have every member the real body has, at the
    /// top, in `unified_receipt`, in each `latest_receipt_info` entry (paired by transaction id) and in each
    /// `pending_renewal_info` entry (paired by subscription), each with Apple's JSON type.
    @Test(arguments: realBodies)
    func keysAndJSONTypesMatchApplesRealBodies(_ name: String) throws {
        let bytes = try Fixtures.bytes("v1/\(name)")
        let real = try #require(try JSONParser.parse(bytes).objectValue)
        let body = try JSONValueDecoder().decode(ResponseBodyV1.self, from: bytes)
        let v1Type = try #require(body.notificationType)
        let (v2Type, v2Subtype) = try #require(
            Self.v2ForV1[v1Type],
            "\(name): a V1 type without its V2 counterpart in the test"
        )

        // The real body's facts, dated as Apple dated them (arrival long after).
        let arrival: Int64 = 4_102_444_800_000
        let facts = V1EventBuilder.facts(fromBody: body, subscription: body.subscriptionID)
        var event = V1EventBuilder().event(for: body, id: "v2-uuid", facts: facts, arrival: arrival)
        (event.source, event.rawType, event.rawSubtype) = (.v2, v2Type, v2Subtype)
        let history = facts.transactions.map { t in
            V1EventBuilder().event(
                for: body,
                id: "earlier",
                facts: V1EventBuilder.Facts(
                    transactions: [t],
                    pendingRenewal: nil,
                    environment: facts.environment,
                    bundleID: facts.bundleID,
                    verified: false
                ),
                arrival: arrival
            )
        }
        let synthesized = try #require(
            V1BodySynthesizer.body(
                for: event,
                history: history,
                latestReceipt: body.receiptData,
                password: Self.marker,
                bundleVersion: body.bvrs?.text
            )
        )
        let mine = try #require(try JSONParser.parse(synthesized).objectValue)
        #expect(mine["notification_type"]?.stringValue == (v1Type == "RENEWAL" ? "DID_RECOVER" : v1Type), "\(name)")

        Self.conforms(mine, to: real, skipping: { key, _ in Self.preUnifiedMembers.contains(key) }, "\(name)")
        guard let realReceipt = real["unified_receipt"]?.objectValue else { return }  // a pre-2021 body without one
        let myReceipt = try #require(mine["unified_receipt"]?.objectValue)
        // `status`: Apple documents a number (0), and its 2020 bodies send 0; the 2019 logs show the string "OK".
        Self.conforms(
            myReceipt,
            to: realReceipt,
            skipping: { key, value in key == "status" && value == .string("OK") },
            "\(name) unified_receipt"
        )
        #expect(myReceipt["status"] == .number("0"))

        let myEntries = (myReceipt["latest_receipt_info"]?.arrayValue ?? []).compactMap(\.objectValue)
        for entry in (realReceipt["latest_receipt_info"]?.arrayValue ?? []).compactMap(\.objectValue) {
            let id = try #require(entry["transaction_id"]?.stringValue)
            let paired = try #require(
                myEntries.first { $0["transaction_id"]?.stringValue == id },
                "\(name): transaction \(id)"
            )
            Self.conforms(paired, to: entry, "\(name) latest_receipt_info \(id)")
            #expect(paired["is_upgraded"] == entry["is_upgraded"], "\(name) \(id): is_upgraded as Apple marked it")
        }
        let myRenewals = (myReceipt["pending_renewal_info"]?.arrayValue ?? []).compactMap(\.objectValue)
        for info in (realReceipt["pending_renewal_info"]?.arrayValue ?? []).compactMap(\.objectValue) {
            let id = try #require(info["original_transaction_id"]?.stringValue)
            let paired = try #require(
                myRenewals.first { $0["original_transaction_id"]?.stringValue == id },
                "\(name): renewal of \(id)"
            )
            Self.conforms(paired, to: info, "\(name) pending_renewal_info \(id)")
        }
    }

    @Test func everyRealNotificationTypeIsCovered() {
        let types = Set(
            Self.realBodies.compactMap { name in
                (try? JSONValueDecoder().decode(ResponseBodyV1.self, from: try Fixtures.bytes("v1/\(name)")))?
                    .notificationType
            }
        )
        #expect(types == Set(Self.v2ForV1.keys), "a real body of a new type needs its V2 counterpart above")
        #expect(Self.realBodies.count == 10)
    }
}

/// Canonical events shaped as ``V2Adapter`` makes them from signed notifications (source `v2`, the V2 type and
/// subtype, kind and reason as its classification gives them, the entitlement computed at `signedDate`), for one
/// subscription of the app.
enum Story {
    static let t0: Int64 = 1_748_736_000_000  // 2025-06-01 00:00:00 UTC
    static let day: Int64 = 86_400_000
    static let month: Int64 = 30 * day
    static let bundle = "com.example.gateway"
    static let subscription = "2000000900000001"
    static let monthly = "com.example.gateway.monthly"
    static let premium = "com.example.gateway.premium"

    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var event: CanonicalEvent
        var history: [CanonicalEvent] = []
        var v1Type: String
        var testDescription: String { name }
    }

    static func event(
        _ type: String,
        _ subtype: String?,
        _ kind: EventKind,
        _ reason: EventReason?,
        at time: Int64,
        transaction: String = subscription,
        product: String = monthly,
        purchase: Int64 = t0,
        expires: Int64? = t0 + month,
        _ edit: (inout CanonicalEvent) -> Void = { _ in }
    ) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: "uuid-\(type)-\(time)",
            source: .v2,
            kind: kind,
            reason: reason,
            rawType: type,
            rawSubtype: subtype,
            eventDate: time,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = bundle
        e.environment = .production
        e.productID = product
        e.productType = expires == nil ? .consumable : .autoRenewable
        e.originalTransactionID = subscription
        e.transactionID = transaction
        e.webOrderLineItemID = "3" + transaction.dropFirst()
        e.subscriptionGroupID = expires == nil ? nil : "21000001"
        e.purchaseDate = purchase
        e.originalPurchaseDate = t0
        e.expiresDate = expires
        e.isIntro = false
        e.isTrial = false
        e.priceMilli = 9_990
        e.currency = "USD"
        e.quantity = 1
        e.ownership = "purchased"
        e.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        if expires != nil {
            e.autoRenew = true
            e.autoRenewProductID = product
            e.inBillingRetry = false
        }
        edit(&e)
        e.computeEntitlement()
        return e
    }

    static let buy = event("SUBSCRIBED", "INITIAL_BUY", .purchase, .initial, at: t0 + 1_000)
    static let buyPremium = event("SUBSCRIBED", "INITIAL_BUY", .purchase, .initial, at: t0 + 1_000, product: premium)

    /// The `i`th monthly period (0 is the purchase), as its DID_RENEW reported it.
    static func renewal(_ i: Int64) -> CanonicalEvent {
        i == 0
            ? buy
            : event(
                "DID_RENEW",
                nil,
                .renewal,
                .auto,
                at: t0 + i * month + 1_000,
                transaction: String(2_000_000_900_000_001 + i),
                purchase: t0 + i * month,
                expires: t0 + (i + 1) * month
            )
    }

    static let failed = event("DID_FAIL_TO_RENEW", nil, .renewalFailure, .billingRetry, at: t0 + month) {
        ($0.inBillingRetry, $0.expirationIntent) = (true, "billing_error")
    }
    static let expiredVoluntarily = event("EXPIRED", "VOLUNTARY", .expiration, .voluntary, at: t0 + month) {
        ($0.autoRenew, $0.expirationIntent) = (false, "customer_cancelled")
    }
    static let pricePending = event("PRICE_INCREASE", "PENDING", .priceIncrease, .pending, at: t0 + 10 * day)
    static let refundOfALifetimeUnlock = event(
        "REFUND",
        nil,
        .refund,
        nil,
        at: t0 + 10 * day,
        product: "com.example.gateway.lifetime",
        expires: nil
    ) {
        $0.productType = .nonConsumable
        ($0.revocationDate, $0.revocationReason) = (t0 + 10 * day, "other")
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "initial-buy", event: buy, v1Type: "INITIAL_BUY"),
        Scenario(
            name: "initial-buy-sandbox",
            event: event("SUBSCRIBED", "INITIAL_BUY", .purchase, .initial, at: t0 + 1_000) {
                $0.environment = .sandbox
            },
            v1Type: "INITIAL_BUY"
        ),
        Scenario(
            name: "initial-buy-free-trial",
            event: event(
                "SUBSCRIBED",
                "INITIAL_BUY",
                .purchase,
                .initial,
                at: t0 + 1_000,
                expires: t0 + 7 * day
            ) {
                ($0.isTrial, $0.isIntro, $0.offerType, $0.priceMilli) = (true, true, "introductory", 0)
            },
            v1Type: "INITIAL_BUY"
        ),
        Scenario(
            name: "initial-buy-intro-price",
            event: event("SUBSCRIBED", "INITIAL_BUY", .purchase, .initial, at: t0 + 1_000) {
                ($0.isTrial, $0.isIntro, $0.offerType) = (false, true, "introductory")
            },
            v1Type: "INITIAL_BUY"
        ),
        Scenario(
            name: "offer-code-buy",
            event: event("OFFER_REDEEMED", "INITIAL_BUY", .purchase, .offerRedeemed, at: t0 + 1_000) {
                ($0.offerType, $0.offerID) = ("offer_code", "SPRING")
            },
            v1Type: "INITIAL_BUY"
        ),
        Scenario(name: "did-renew", event: renewal(1), history: [buy], v1Type: "DID_RENEW"),
        Scenario(
            name: "billing-recovery",
            event: event(
                "DID_RENEW",
                "BILLING_RECOVERY",
                .renewal,
                .billingRecovery,
                at: t0 + month + 5 * day,
                transaction: "2000000900000002",
                purchase: t0 + month + 5 * day,
                expires: t0 + 2 * month + 5 * day
            ),
            history: [buy, failed],
            v1Type: "DID_RECOVER"
        ),
        Scenario(
            name: "resubscribe",
            event: event(
                "SUBSCRIBED",
                "RESUBSCRIBE",
                .purchase,
                .resubscribe,
                at: t0 + 2 * month,
                transaction: "2000000900000002",
                purchase: t0 + 2 * month,
                expires: t0 + 3 * month
            ),
            history: [buy, expiredVoluntarily],
            v1Type: "INTERACTIVE_RENEWAL"
        ),
        Scenario(
            name: "offer-resubscribe",
            event: event(
                "OFFER_REDEEMED",
                "RESUBSCRIBE",
                .purchase,
                .resubscribe,
                at: t0 + 2 * month,
                transaction: "2000000900000002",
                purchase: t0 + 2 * month,
                expires: t0 + 3 * month
            ) {
                ($0.offerType, $0.offerID) = ("promotional", "WINBACK")
            },
            history: [buy, expiredVoluntarily],
            v1Type: "INTERACTIVE_RENEWAL"
        ),
        Scenario(
            name: "upgrade",
            event: event(
                "DID_CHANGE_RENEWAL_PREF",
                "UPGRADE",
                .planChange,
                .upgrade,
                at: t0 + 15 * day,
                transaction: "2000000900000002",
                product: premium,
                purchase: t0 + 15 * day,
                expires: t0 + 45 * day
            ),
            history: [buy],
            v1Type: "INTERACTIVE_RENEWAL"
        ),
        Scenario(
            name: "offer-upgrade",
            event: event(
                "OFFER_REDEEMED",
                "UPGRADE",
                .planChange,
                .upgrade,
                at: t0 + 15 * day,
                transaction: "2000000900000002",
                product: premium,
                purchase: t0 + 15 * day,
                expires: t0 + 45 * day
            ) {
                ($0.offerType, $0.offerID) = ("offer_code", "UPGRADE50")
            },
            history: [buy],
            v1Type: "INTERACTIVE_RENEWAL"
        ),
        Scenario(
            name: "downgrade",
            event: event(
                "DID_CHANGE_RENEWAL_PREF",
                "DOWNGRADE",
                .planChange,
                .downgrade,
                at: t0 + 15 * day,
                product: premium
            ) {
                $0.autoRenewProductID = monthly
            },
            history: [buyPremium],
            v1Type: "DID_CHANGE_RENEWAL_PREF"
        ),
        Scenario(
            name: "downgrade-reverted",
            event: event(
                "DID_CHANGE_RENEWAL_PREF",
                nil,
                .planChange,
                .reverted,
                at: t0 + 16 * day,
                product: premium
            ),
            history: [buyPremium],
            v1Type: "DID_CHANGE_RENEWAL_PREF"
        ),
        Scenario(
            name: "auto-renew-off",
            event: event(
                "DID_CHANGE_RENEWAL_STATUS",
                "AUTO_RENEW_DISABLED",
                .autoRenewChanged,
                .disabled,
                at: t0 + 10 * day
            ) {
                ($0.autoRenew, $0.expirationIntent) = (false, "customer_cancelled")
            },
            history: [buy],
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Scenario(
            name: "auto-renew-on",
            event: event(
                "DID_CHANGE_RENEWAL_STATUS",
                "AUTO_RENEW_ENABLED",
                .autoRenewChanged,
                .enabled,
                at: t0 + 12 * day
            ),
            history: [buy],
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Scenario(
            name: "expired-after-billing-retry",
            event: event(
                "EXPIRED",
                "BILLING_RETRY",
                .expiration,
                .billingRetry,
                at: t0 + month + 60 * day
            ) {
                ($0.autoRenew, $0.expirationIntent) = (false, "billing_error")
            },
            history: [buy, failed],
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Scenario(
            name: "expired-price-increase",
            event: event(
                "EXPIRED",
                "PRICE_INCREASE",
                .expiration,
                .priceIncrease,
                at: t0 + month
            ) {
                ($0.autoRenew, $0.expirationIntent) = (false, "price_increase_declined")
            },
            history: [buy, pricePending],
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Scenario(
            name: "billing-failure-grace",
            event: event(
                "DID_FAIL_TO_RENEW",
                "GRACE_PERIOD",
                .renewalFailure,
                .gracePeriod,
                at: t0 + month
            ) {
                ($0.inBillingRetry, $0.expirationIntent, $0.gracePeriodExpiresDate) = (
                    true, "billing_error", t0 + month + 16 * day
                )
            },
            history: [buy],
            v1Type: "DID_FAIL_TO_RENEW"
        ),
        Scenario(name: "billing-failure-retry", event: failed, history: [buy], v1Type: "DID_FAIL_TO_RENEW"),
        Scenario(
            name: "refund-subscription",
            event: event("REFUND", nil, .refund, nil, at: t0 + 10 * day) {
                ($0.revocationDate, $0.revocationReason, $0.autoRenew) = (t0 + 10 * day, "app_issue", false)
            },
            history: [buy],
            v1Type: "CANCEL"
        ),
        Scenario(name: "refund-non-consumable", event: refundOfALifetimeUnlock, v1Type: "REFUND"),
        Scenario(
            name: "family-revoke",
            event: event("REVOKE", nil, .revocation, nil, at: t0 + 10 * day) {
                ($0.revocationDate, $0.ownership) = (t0 + 10 * day, "family_shared")
            },
            history: [buy],
            v1Type: "REVOKE"
        ),
        Scenario(name: "price-increase-pending", event: pricePending, history: [buy], v1Type: "PRICE_INCREASE_CONSENT"),
        Scenario(
            name: "consumption-request",
            event: event(
                "CONSUMPTION_REQUEST",
                nil,
                .consumptionRequest,
                nil,
                at: t0 + day,
                product: "com.example.gateway.coins100",
                expires: nil
            ),
            v1Type: "CONSUMPTION_REQUEST"
        ),
    ]
}
