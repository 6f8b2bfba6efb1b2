internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import Store
internal import V2Adapter
internal import WireJSON

/// Fills a fresh store with what the gateway would have written after a week of traffic, through the store's own write
/// API (``StoreTransaction``), a few thousand notifications per transaction, so the rows are exactly the service's:
/// - `notifications` journal rows, one in five a V1 body (with its verifyReceipt job done, its `v1` event, the
///   subscription's receipt), the others V2 `signedPayload` bodies with their `v2` event. The V2 bodies are
///   real-shaped: the header (with its certificate chain) and signature of a token signed once by the bench PKI, around
///   a payload that names this notification's ids — the gateway never verifies a stored body again.
/// - their events, each subscription's state per path, and the outbox rows the routing queues: settled as delivered
///   (one in 500 dead-lettered; a few of the newest left pending).
/// - `pairs` comparisons in the ledger spread over the window (most agree; some disagree on expires_date, auto_renew,
///   entitlement or product_id; some one-sided), with both paths' snapshots.
/// Every time lies in the week before `now`, so the report's 7-day window sees all of it. One subscription in twenty is
/// a 3-day product that has been silent for two days: the reconciliation rule selects those near their expiry.
struct ScaleStoreBuilder: Sendable {
    static let bundle = BenchRig.bundle
    static let secretName = "BENCH_SECRET"
    static let day: Int64 = 86_400_000

    let store: any GatewayStore
    let router: Router
    let now: Int64
    let notifications: Int
    let pairs: Int
    let subscriptions: Int
    let signer: AppleJWSSigner
    /// The bench leaf certificate's serial, as ingest records it.
    let leafSerial: String
    /// Notifications (or ledger rows) per transaction.
    var batch = 5_000
    var progress: @Sendable (String) -> Void = { _ in }

    /// The oldest notification's time and the span the notifications and comparisons are spread over.
    var start: Int64 { now - 6 * Self.day - Self.day * 9 / 10 }
    var span: Int64 { now - 60_000 - start }

    struct Counts: Sendable {
        var journal = 0
        var v1 = 0
        var v2 = 0
        var ledger = 0
        var delivered = 0
        var dead = 0
        var pending = 0
        /// V1 path events of V2 notifications that stand alone (``JournalRows``'s V1 view).
        var v1Views = 0
    }

    /// The pieces of a token signed once by the bench PKI: `header.` and `.signature`.
    struct TokenTemplate: Sendable {
        var header: String
        var signature: String
        func token(_ payload: String) -> String {
            header + "." + Base64.encode(Array(payload.utf8), alphabet: .url) + "." + signature
        }
    }

    static func otid(_ s: Int) -> String { "2000000" + BenchRig.padded(s, 9) }

    /// The subscription with the most history: what `subscription OTID` is timed on.
    static var sampleSubscription: String { otid(1) }

    func time(ofNotification i: Int) -> Int64 { start + Int64(i) * span / Int64(max(1, notifications)) }

    /// The subscription notification `i` is about: `i mod subscriptions`, except that the quiet ones (one in twenty)
    /// get nothing in the last two days.
    func subscription(ofNotification i: Int) -> Int {
        let s = i % max(1, subscriptions)
        if s % 20 == 0, time(ofNotification: i) > now - 2 * Self.day { return (s + 1) % max(1, subscriptions) }
        return s
    }

    func environment(of s: Int) -> AppStoreEnvironment { s % 10 == 9 ? .sandbox : .production }

    /// A notification ready to journal, with what verifyReceipt would have made of a V1 one.
    struct Prepared: Sendable {
        var item: JournalItem
        var time: Int64
        var v1Event: CanonicalEvent?
        var receipt: String?
    }

    func build() async throws -> Counts {
        let template = try Self.template(signer)
        var counts = Counts()
        let clock = ContinuousClock()
        let began = clock.now
        let bundle = Self.bundle
        let seedNow = start
        try await store.write { tx in
            _ = try tx.seedAuthority(
                [
                    AuthorityEntry(bundleID: bundle, environment: .production, authority: .v1, origin: .config),
                    AuthorityEntry(bundleID: bundle, environment: .sandbox, authority: .v1, origin: .config),
                ],
                now: seedNow
            )
        }
        // Each batch is made ready while the one before it is written.
        func preparing(_ range: Range<Int>) -> Task<[Prepared], Never> {
            Task.detached { [self] in range.map { prepare($0, template: template) } }
        }
        var from = 0
        var next = preparing(0..<min(notifications, batch))
        while from < notifications {
            let to = min(notifications, from + batch)
            let prepared = await next.value
            if to < notifications { next = preparing(to..<min(notifications, to + batch)) }
            let last = to == notifications
            let settled = try await write(prepared, leavePending: last)
            counts.journal += prepared.count
            counts.v1 += prepared.count { $0.v1Event != nil }
            counts.v2 += prepared.count { $0.v1Event == nil }
            counts.delivered += settled.delivered
            counts.dead += settled.dead
            counts.pending += settled.pending
            counts.v1Views += settled.v1Views
            from = to
            progress("notifications \(to)/\(notifications) (\(Self.seconds(clock.now - began)) s)")
        }
        from = 0
        while from < pairs {
            let to = min(pairs, from + batch * 2)
            let entries = (from..<to).map(ledgerEntry)
            try await store.write { tx in
                for (entry, snapshots) in entries {
                    if let v1 = snapshots.v1 { try tx.putSnapshot(v1, path: .v1) }
                    if let v2 = snapshots.v2 { try tx.putSnapshot(v2, path: .v2) }
                    try tx.recordComparison(entry)
                }
            }
            counts.ledger += entries.count
            from = to
            progress("pairs \(to)/\(pairs) (\(Self.seconds(clock.now - began)) s)")
        }
        return counts
    }

    /// Journals the notifications as ingest does, completes the V1 ones as the verifyReceipt stage does, and settles
    /// the deliveries they queued as the delivery worker would have.
    private func write(
        _ prepared: [Prepared],
        leavePending: Bool
    ) async throws -> (
        delivered: Int, dead: Int, pending: Int, v1Views: Int
    ) {
        let router = self.router
        let names = router.downstreamNames
        let now = self.now
        let bundle = Self.bundle
        let secretName = Self.secretName
        return try await store.write { tx in
            var v1Views = 0
            for p in prepared {
                guard case .accepted(let journalID) = try tx.journal(p.item, routing: router.routing, now: p.time)
                else {
                    continue
                }
                guard let event = p.v1Event, let receipt = p.receipt, let otid = event.originalTransactionID,
                    let environment = event.environment
                else {
                    // A V2 notification that stands alone under V1 authority (no V1 traffic for its environment): its
                    // V1 path's event, as the receipt stage stores it, so the service starts on no backlog.
                    guard let v2 = p.item.events.first, let environment = v2.environment,
                        try tx.standsAlone(.v2, bundleID: bundle, environment: environment, now: p.time)
                    else { continue }
                    let view = V1View.event(of: v2, notificationKey: p.item.key)
                    let settled = p.time + 500
                    try tx.storeEvents(
                        [view],
                        journalID: journalID,
                        routing: router.routing,
                        now: settled,
                        authority: .v1
                    )
                    try tx.settleReceiptJob(
                        journalID: journalID,
                        state: .done,
                        attempts: 1,
                        nextAttemptAt: settled,
                        error: nil,
                        appleStatus: nil,
                        now: settled
                    )
                    v1Views += 1
                    continue
                }
                let verified = p.time + 1_500
                try tx.storeEvents(
                    [event],
                    journalID: journalID,
                    routing: router.routing,
                    now: verified,
                    authority: .v1
                )
                try tx.putReceipt(
                    StoredReceipt(receipt: receipt, secretName: secretName, updatedAt: verified),
                    of: SubscriptionKey(bundleID: bundle, environment: environment, originalTransactionID: otid)
                )
                try tx.settleReceiptJob(
                    journalID: journalID,
                    state: .done,
                    attempts: 1,
                    nextAttemptAt: verified,
                    error: nil,
                    appleStatus: 0,
                    now: verified
                )
            }
            var (delivered, dead, pending) = (0, 0, 0)
            let lease = Lease(owner: "bench-scale", until: now + 60_000)
            for name in names {
                for job in try tx.claimDueDeliveries(downstream: name, at: now, limit: 1_000_000, lease: lease) {
                    if leavePending, job.id % 100 == 0 {
                        pending += 1
                        continue
                    }
                    let failed = job.id % 500 == 7
                    try tx.settleDelivery(
                        id: job.id,
                        DeliveryOutcome(
                            state: failed ? .dead : .delivered,
                            attempts: failed ? 12 : 1,
                            nextAttemptAt: job.createdAt,
                            deliveredAt: failed ? nil : job.createdAt + 250,
                            status: failed ? 500 : 200,
                            error: failed ? "HTTP 500" : nil
                        )
                    )
                    if failed { dead += 1 } else { delivered += 1 }
                }
            }
            return (delivered, dead, pending, v1Views)
        }
    }

    // MARK: Notifications

    /// What each template of notification is: its V1 and V2 type, our kind and reason, whether auto-renew is on.
    struct Kind: Sendable {
        var v1: String
        var v2: String
        var subtype: String?
        var kind: EventKind
        var reason: EventReason?
        var autoRenew: Bool
    }

    /// Six renewals in ten, then a purchase, auto-renew turned off and on, a failed renewal.
    private static let kinds: [Kind] = [
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(v1: "DID_RENEW", v2: "DID_RENEW", kind: .renewal, autoRenew: true),
        Kind(
            v1: "INITIAL_BUY",
            v2: "SUBSCRIBED",
            subtype: "INITIAL_BUY",
            kind: .purchase,
            reason: .initial,
            autoRenew: true
        ),
        Kind(
            v1: "DID_CHANGE_RENEWAL_STATUS",
            v2: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_DISABLED",
            kind: .autoRenewChanged,
            reason: .disabled,
            autoRenew: false
        ),
        Kind(
            v1: "DID_CHANGE_RENEWAL_STATUS",
            v2: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_ENABLED",
            kind: .autoRenewChanged,
            reason: .enabled,
            autoRenew: true
        ),
        Kind(
            v1: "DID_FAIL_TO_RENEW",
            v2: "DID_FAIL_TO_RENEW",
            kind: .renewalFailure,
            reason: .billingRetry,
            autoRenew: true
        ),
    ]

    func prepare(_ i: Int, template: TokenTemplate) -> Prepared {
        let s = subscription(ofNotification: i)
        let otid = Self.otid(s)
        let t = time(ofNotification: i)
        let environment = environment(of: s)
        let kind = Self.kinds[(i / 5) % Self.kinds.count]
        // A monthly product; the quiet subscriptions a 3-day one.
        let product = s % 20 == 0 ? "p.3day" : "p.monthly"
        let period = s % 20 == 0 ? 3 * Self.day : 30 * Self.day
        let expires = t + period
        let transactionID = "3" + BenchRig.padded(i, 15)
        if i % 5 == 0 {
            let body = Self.v1Body(
                type: kind.v1,
                otid: otid,
                transactionID: transactionID,
                product: product,
                environment: environment,
                purchase: t,
                expires: expires,
                autoRenew: kind.autoRenew
            )
            let key = "v1:" + SHA256.hex(body)
            var item = JournalItem(key: key, version: .v1, receivedAt: t, body: body)
            item.bundleID = Self.bundle
            item.environment = environment
            item.notificationType = kind.v1
            item.secretName = Self.secretName
            item.needsReceipt = true
            var event = Self.event(
                id: key,
                source: .v1,
                kind: kind,
                rawType: kind.v1,
                otid: otid,
                transactionID: transactionID,
                product: product,
                environment: environment,
                date: t,
                expires: expires
            )
            event.eventDateSource = .arrival
            event.computeEntitlement()
            return Prepared(item: item, time: t, v1Event: event, receipt: "bench-receipt-" + otid)
        }
        let uuid = Self.uuid(i)
        let token = Self.v2Token(
            template,
            uuid: uuid,
            type: kind.v2,
            subtype: kind.subtype,
            otid: otid,
            transactionID: transactionID,
            product: product,
            environment: environment,
            signed: t,
            expires: expires,
            autoRenew: kind.autoRenew
        )
        var item = JournalItem(key: uuid, version: .v2, receivedAt: t, body: InboundBody.v2(signedPayload: token))
        item.bundleID = Self.bundle
        item.environment = environment
        item.notificationType = kind.v2
        item.subtype = kind.subtype
        item.leafSerial = leafSerial
        var event = Self.event(
            id: uuid,
            source: .v2,
            kind: kind,
            rawType: kind.v2,
            otid: otid,
            transactionID: transactionID,
            product: product,
            environment: environment,
            date: t,
            expires: expires
        )
        event.rawSubtype = kind.subtype
        event.priceMilli = 9_990
        event.currency = "USD"
        event.subscriptionGroupID = "21000001"
        event.computeEntitlement()
        item.events = [event]
        return Prepared(item: item, time: t, v1Event: nil, receipt: nil)
    }

    static func uuid(_ i: Int) -> String { "5ca1e000-0000-4000-8000-" + BenchRig.padded(i, 12) }

    static func event(
        id: String,
        source: EventSource,
        kind: Kind,
        rawType: String,
        otid: String,
        transactionID: String,
        product: String,
        environment: AppStoreEnvironment,
        date: Int64,
        expires: Int64
    ) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: id,
            source: source,
            kind: kind.kind,
            reason: kind.reason,
            rawType: rawType,
            eventDate: date,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = bundle
        e.appAppleID = 1
        e.environment = environment
        e.productID = product
        e.productType = .autoRenewable
        e.originalTransactionID = otid
        e.transactionID = transactionID
        e.webOrderLineItemID = transactionID
        e.purchaseDate = date
        e.originalPurchaseDate = date - 90 * day
        e.expiresDate = expires
        e.autoRenew = kind.autoRenew
        e.autoRenewProductID = product
        e.inBillingRetry = kind.kind == .renewalFailure
        e.isTrial = false
        e.quantity = 1
        e.ownership = "purchased"
        return e
    }

    /// A V1 body as the journal keeps it: the password replaced by the marker naming its secret's variable.
    static func v1Body(
        type: String,
        otid: String,
        transactionID: String,
        product: String,
        environment: AppStoreEnvironment,
        purchase: Int64,
        expires: Int64,
        autoRenew: Bool
    ) -> [UInt8] {
        let env = environment == .sandbox ? "Sandbox" : "PROD"
        return Array(
            """
            {"notification_type":"\(type)","password":"\(SecretRedactor.marker(secretName))","environment":"\(env)",\
            "bid":"\(bundle)","bvrs":"1","auto_renew_status":"\(autoRenew)","auto_renew_product_id":"\(product)",\
            "original_transaction_id":"\(otid)","unified_receipt":{"environment":"\(env == "PROD" ? "Production" : "Sandbox")",\
            "latest_receipt":"bench-receipt-\(otid)","status":0,"latest_receipt_info":[{"original_transaction_id":"\(otid)",\
            "transaction_id":"\(transactionID)","web_order_line_item_id":"\(transactionID)","product_id":"\(product)",\
            "quantity":"1","purchase_date_ms":"\(purchase)","original_purchase_date_ms":"\(purchase - 90 * day)",\
            "expires_date_ms":"\(expires)","is_trial_period":"false","is_in_intro_offer_period":"false",\
            "subscription_group_identifier":"21000001"}],"pending_renewal_info":[{"auto_renew_product_id":"\(product)",\
            "original_transaction_id":"\(otid)","product_id":"\(product)","auto_renew_status":"\(autoRenew ? 1 : 0)"}]}}
            """.utf8
        )
    }

    /// A V2 `signedPayload` with its signed transaction and renewal info, each in the template's header and signature.
    static func v2Token(
        _ template: TokenTemplate,
        uuid: String,
        type: String,
        subtype: String?,
        otid: String,
        transactionID: String,
        product: String,
        environment: AppStoreEnvironment,
        signed: Int64,
        expires: Int64,
        autoRenew: Bool
    ) -> String {
        let env = environment == .sandbox ? "Sandbox" : "Production"
        let transaction = template.token(
            """
            {"transactionId":"\(transactionID)","originalTransactionId":"\(otid)","webOrderLineItemId":"\(transactionID)",\
            "bundleId":"\(bundle)","productId":"\(product)","subscriptionGroupIdentifier":"21000001","purchaseDate":\(signed),\
            "originalPurchaseDate":\(signed - 90 * day),"expiresDate":\(expires),"quantity":1,"type":"Auto-Renewable Subscription",\
            "inAppOwnershipType":"PURCHASED","signedDate":\(signed),"environment":"\(env)","transactionReason":"RENEWAL",\
            "storefront":"USA","storefrontId":"143441","price":9990,"currency":"USD"}
            """
        )
        let renewal = template.token(
            """
            {"originalTransactionId":"\(otid)","autoRenewProductId":"\(product)","productId":"\(product)",\
            "autoRenewStatus":\(autoRenew ? 1 : 0),"signedDate":\(signed),"environment":"\(env)",\
            "recentSubscriptionStartDate":\(signed - 90 * day),"renewalDate":\(expires)}
            """
        )
        let subtypeMember = subtype.map { "\"subtype\":\"\($0)\"," } ?? ""
        return template.token(
            """
            {"notificationType":"\(type)",\(subtypeMember)"notificationUUID":"\(uuid)","data":{"appAppleId":1,\
            "bundleId":"\(bundle)","bundleVersion":"1","environment":"\(env)","signedTransactionInfo":"\(transaction)",\
            "signedRenewalInfo":"\(renewal)","status":1},"version":"2.0","signedDate":\(signed)}
            """
        )
    }

    static func template(_ signer: AppleJWSSigner) throws -> TokenTemplate {
        let token = try signer.sign(payload: Array(#"{"template":true}"#.utf8))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw IngestBenchmark.Failure(description: "the bench signer made no JWS") }
        return TokenTemplate(header: String(parts[0]), signature: String(parts[2]))
    }

    // MARK: The ledger

    /// The fields a disagreement names, in turn.
    private static let disagreements: [[String]] = [
        ["expires_date"], ["auto_renew"], ["entitlement", "expires_date"], ["product_id"], ["expires_date"],
    ]

    /// Comparison `p`: 94 % agree, 4 % disagree, 1 % V1 only, 1 % V2 only.
    func ledgerEntry(_ p: Int) -> (LedgerEntry, (v1: OutcomeSnapshot?, v2: OutcomeSnapshot?)) {
        let s = (p * 7 + 1) % max(1, subscriptions)
        let otid = Self.otid(s)
        let environment = environment(of: s)
        let at = start + Int64(p) * span / Int64(max(1, pairs))
        let key = SubscriptionKey(bundleID: Self.bundle, environment: environment, originalTransactionID: otid)
        let expires = at + 20 * Self.day
        func snapshot(_ source: EventSource, product: String, expires: Int64, autoRenew: Bool) -> OutcomeSnapshot {
            OutcomeSnapshot(
                source: source,
                bundleID: Self.bundle,
                environment: environment,
                originalTransactionID: otid,
                productID: product,
                transactionID: "3" + BenchRig.padded(p, 15),
                expiresDate: expires,
                revocationDate: nil,
                gracePeriodExpiresDate: nil,
                autoRenew: autoRenew,
                autoRenewProductID: product,
                inBillingRetry: false,
                expirationIntent: nil,
                observedAt: at - 2_000
            )
        }
        var v1 = snapshot(.v1Receipt, product: "p.monthly", expires: expires, autoRenew: true)
        var v2 = snapshot(.v2, product: "p.monthly", expires: expires, autoRenew: true)
        v2.observedAt = at
        let bucket = p % 100
        let outcome: CompareOutcome
        var fields: [String] = []
        switch bucket {
        case 0: outcome = .v1Only
        case 1: outcome = .v2Only
        case 2...5:
            outcome = .disagree
            fields = Self.disagreements[(p / 100) % Self.disagreements.count]
            for field in fields {
                switch field {
                case "expires_date":
                    v2 = snapshot(.v2, product: "p.monthly", expires: expires + 3 * Self.day, autoRenew: true)
                case "auto_renew": v2 = snapshot(.v2, product: "p.monthly", expires: expires, autoRenew: false)
                case "entitlement":
                    v1 = snapshot(.v1Receipt, product: "p.monthly", expires: at - Self.day, autoRenew: true)
                default: v2 = snapshot(.v2, product: "p.yearly", expires: expires, autoRenew: true)
                }
            }
            v2.observedAt = at
            fields = OutcomeComparison.disagreements(v1: v1, v2: v2)
        default: outcome = .agree
        }
        let entry = LedgerEntry(
            subscription: key,
            comparedAt: at,
            outcome: outcome,
            fields: fields,
            v1: outcome == .v2Only ? nil : v1,
            v2: outcome == .v1Only ? nil : v2
        )
        return (entry, (entry.v1, entry.v2))
    }

    static func seconds(_ d: Duration) -> Double {
        ((Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 10).rounded() / 10
    }
}
