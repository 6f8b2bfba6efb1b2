public import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Policy
public import ServiceKit
public import Store
public import V1Adapter
public import V2Adapter
public import WireJSON

/// `POST /notifications` (docs/architecture.md): detect the version, authenticate with what is local and fast, journal the
/// body (and V2 events) durably, answer. Nothing slow happens here: verifyReceipt, delivery and API look-ups run
/// later from the store.
public final class NotificationIngest: Sendable {
    /// The outcome of one body, for the HTTP answer, the log line and the metrics.
    public struct Result: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var code: String?
        public var version: Generation?
        public var id: String?
        public var duplicate = false
        public var bundleID: String?
        public var environment: String?
        public var notificationType: String?
        public var subtype: String?
        public var leafSerial: String?
        /// For a refusal: whether the body was quarantined, and where.
        public var quarantine: QuarantineDisposition?

        /// A `503` whose body the gateway keeps nowhere — the store could not journal it, or its quarantine lane was full
        /// or could not be written — so it must come again: Apple retries it, and a run through Apple's history (the
        /// sweep, `backfill`) stops at it rather than going past it. Any other refusal is held in the quarantine (or was
        /// refused for good): such a run skips it and goes on.
        public var mustComeAgain: Bool {
            guard status == 503 else { return false }
            switch quarantine {
            case .stored?, .held?: return false
            case .notStored?, nil: return true
            }
        }
    }

    /// What became of a refused body.
    public enum QuarantineDisposition: Sendable, Equatable {
        case stored(lane: Disposition.Lane)
        /// The lane was full (the genuine lane never evicts) or the store failed: nothing kept. Apple retries a 503.
        case notStored(lane: Disposition.Lane)
        /// Not stored again: the lane holds the same body already (an origin that quarantines once).
        case held(lane: Disposition.Lane)
    }

    /// Where a body comes from, and so how it is judged.
    public struct Origin: Sendable, Equatable {
        /// What the journal records.
        public var name: JournalOrigin
        /// When the body first reached the gateway, if not now: freshness is judged as of then, and the journal
        /// keeps it as the arrival time.
        public var arrivedAt: Int64?
        /// Whether V2's freshness window applies (docs/architecture.md, "The endpoint": live traffic and its replays; not the App Store
        /// Server API's history, which we fetched ourselves over TLS).
        public var checksFreshness: Bool
        /// Whether a refusal is quarantined. A replay of a quarantined row records its outcome on that row instead.
        public var quarantinesRefusals: Bool
        /// What the events of a body that was not journaled before carry in `recovered_by`.
        public var recoveredBy: RecoveryMechanism? = nil
        /// Whether a refused body is quarantined only when its lane does not hold it already: Apple's notification
        /// history lists the same notification on every run whose window covers it (the sweep's windows overlap;
        /// `backfill` may be run again), and the genuine lane never evicts — one row per notification, not per run.
        public var quarantinesOnce = false

        /// A request on the endpoint.
        public static let live = Origin(name: .live, arrivedAt: nil, checksFreshness: true, quarantinesRefusals: true)
        /// Get Notification History, fetched by `backfill`: what it finds was missed.
        public static let backfill = Origin(
            name: .backfill,
            arrivedAt: nil,
            checksFreshness: false,
            quarantinesRefusals: true,
            recoveredBy: .history,
            quarantinesOnce: true
        )
        /// Get Notification History, fetched by the scheduled sweep (docs/operations.md, "Reconciliation").
        public static let historySweep = Origin(
            name: .historySweep,
            arrivedAt: nil,
            checksFreshness: false,
            quarantinesRefusals: true,
            recoveredBy: .history,
            quarantinesOnce: true
        )
        /// A quarantined body run again: judged as it would have been when it arrived, never more leniently.
        public static func quarantineReplay(arrivedAt: Int64) -> Origin {
            Origin(name: .quarantineReplay, arrivedAt: arrivedAt, checksFreshness: true, quarantinesRefusals: false)
        }
    }

    public struct Limits: Sendable {
        /// The untrusted lane (forged, malformed, unauthenticated): oldest rows dropped beyond these.
        public var untrustedQuarantineCap = 1_000
        public var untrustedQuarantineBytes: Int64 = 16 * 1_048_576
        /// The genuine lane (authenticated but unservable): never evicted; beyond these, 503 without storing.
        public var genuineQuarantineCap = 10_000
        public var genuineQuarantineBytes: Int64 = 256 * 1_048_576
        public var maxNotificationAgeMillis: Int64 = 10 * 86_400_000
        /// `serve --demo-verify-time`: sandbox notifications are judged fresh or stale as if they arrived at this
        /// time (ms), so that saved real samples can be posted in a demo. Production is always judged by the clock.
        public var demoSandboxVerifyTime: Int64?
        public init() {}

        func cap(_ lane: Disposition.Lane) -> QuarantineCap {
            switch lane {
            case .untrusted:
                QuarantineCap(rows: untrustedQuarantineCap, bytes: untrustedQuarantineBytes, evictsOldest: true)
            case .genuine: QuarantineCap(rows: genuineQuarantineCap, bytes: genuineQuarantineBytes, evictsOldest: false)
            }
        }
    }

    public let v1: V1Adapter
    public let v2: V2Adapter
    let store: any GatewayStore
    let router: Router
    let limits: Limits
    let metrics: Metrics
    /// `iapgw_verify_seconds{version="v2"}`, resolved once: recorded on every V2 body without the metrics' lock.
    private let verifySeconds: Metrics.HistogramSeries
    let now: @Sendable () -> Int64
    /// The configured secrets, kept out of every stored body, column and log line (docs/threat-model.md).
    let redactor: SecretRedactor

    /// `redactor`: every configured secret; nil: the V1 adapter's shared secrets.
    public init(
        v1: V1Adapter,
        v2: V2Adapter,
        store: any GatewayStore,
        router: Router,
        limits: Limits,
        metrics: Metrics,
        redactor: SecretRedactor? = nil,
        now: @escaping @Sendable () -> Int64
    ) {
        self.v1 = v1
        self.v2 = v2
        self.store = store
        self.router = router
        self.limits = limits
        self.metrics = metrics
        verifySeconds = metrics.histogramSeries(.verifySeconds, ["version": Generation.v2.rawValue])
        self.now = now
        self.redactor =
            redactor
            ?? SecretRedactor(
                v1.apps.values.flatMap(\.sharedSecrets).map {
                    SecretRedactor.Secret(name: $0.name, value: Array($0.revealedValue.utf8))
                }
            )
    }

    /// Handles one body.
    public func handle(_ bytes: [UInt8], origin: Origin = .live) -> Result {
        let received = origin.arrivedAt ?? now()
        let inbound: InboundBody
        do { inbound = try InboundBody.classify(bytes, allowBareTokens: false) } catch {
            return refuse(GatewayError(error), version: nil, bytes: bytes, at: received, origin: origin)
        }
        switch inbound {
        case .v2Notification(let token):
            return handleV2(token, bytes: bytes, origin: origin, received: received)
        case .v1Notification:
            return handleV1(bytes, origin: origin, received: received)
        case .signedTransaction, .signedRenewalInfo, .verifyReceiptResponse:
            return refuse(
                GatewayError(.unknownVersion, "not a notification"),
                version: nil,
                bytes: bytes,
                at: received,
                origin: origin
            )
        }
    }

    // MARK: V2

    private func handleV2(_ token: [UInt8], bytes: [UInt8], origin: Origin, received: Int64) -> Result {
        let started = ContinuousClock.now
        let verified: VerifiedNotificationV2
        // `received` is the reference: for a replay, the row's arrival (a refusal never becomes an acceptance). The demo
        // override applies to payloads claiming the sandbox only; the claim is signed, so verification holds it to that.
        // The claim is read (a second decoding of the payload) only where it is used: the demo, and a refusal.
        var reference = received
        if let demo = limits.demoSandboxVerifyTime, Self.claimedIdentity(token)?.1 == "Sandbox" { reference = demo }
        do {
            verified = try v2.verifyNotification(
                signedPayload: token,
                now: reference,
                freshness: origin.checksFreshness
                    ? V2Adapter.Freshness(maxAgeMillis: limits.maxNotificationAgeMillis) : nil
            )
        } catch {
            verifySeconds.observe(seconds(since: started))
            let claim = Self.claimedIdentity(token)
            return refuse(
                GatewayError(error),
                version: .v2,
                bytes: bytes,
                at: received,
                origin: origin,
                claimedBundle: claim?.0,
                claimedEnvironment: claim?.1
            )
        }
        verifySeconds.observe(seconds(since: started))
        if redactor.occurs(in: bytes) {
            return refuseCarriedSecret(version: .v2, bytes: bytes, at: received, origin: origin)
        }
        var item = JournalItem(
            key: verified.payload.notificationUUID ?? "",
            version: .v2,
            receivedAt: received,
            body: bytes
        )
        item.origin = origin.name
        item.bundleID = verified.bundleID
        item.environment = verified.environment
        item.notificationType = verified.payload.notificationType
        item.subtype = verified.payload.subtype
        item.leafSerial = verified.leafSerial
        item.events = verified.canonicalEvents().map { event in
            var event = event
            event.recoveredBy = origin.recoveredBy
            return event
        }
        // Whether a V1 backend can be told of it (docs/architecture.md, "The V1 shape of a V2 notification").
        item.v1NotificationType = item.events.first.flatMap(V1BodySynthesizer.v1NotificationType(for:))
        if NotificationPolicy.v1ShapeUnsent(item.policyFacts, routing: router.routing) {
            metrics.increment(.v1ShapesUnsentTotal, ["type": ClaimedText.clip(item.notificationType ?? "", limit: 64)])
        }
        guard !item.key.isEmpty else {
            return refuse(
                GatewayError(.malformed, "notification has no notificationUUID"),
                version: .v2,
                bytes: bytes,
                at: received,
                origin: origin
            )
        }
        var r = commit(item, bytes: bytes, origin: origin)
        r.leafSerial = verified.leafSerial
        return r
    }

    /// What an unverified V2 token claims (bundle, environment), for the log line and quarantine row of a refusal
    /// only (clipped there).
    static func claimedIdentity(_ token: [UInt8]) -> (String?, String?)? {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = try? Base64.decode(parts[1], alphabet: .url),
            case .object(let p)? = try? JSONParser.parse(bytes), case .object(let d)? = p["data"]
        else { return nil }
        return (d["bundleId"]?.stringValue, d["environment"]?.stringValue)
    }

    // MARK: V1

    private func handleV1(_ bytes: [UInt8], origin: Origin, received: Int64) -> Result {
        let n: AuthenticatedV1Notification
        do { n = try v1.authenticate(body: bytes) } catch {
            return refuse(
                GatewayError(error),
                version: .v1,
                bytes: bytes,
                at: received,
                origin: origin,
                claimedBundle: V1Adapter.claimedBundle(body: bytes)
            )
        }
        if redactor.occurs(in: n.redactedBody) {
            return refuseCarriedSecret(version: .v1, bytes: bytes, at: received, origin: origin)
        }
        var item = JournalItem(key: n.eventID, version: .v1, receivedAt: received, body: n.redactedBody)
        item.origin = origin.name
        item.bundleID = n.bundleID
        item.environment = n.environment
        item.notificationType = n.body.notificationType
        item.secretName = n.secretName
        if n.app.verifyReceipt {
            item.needsReceipt = true
        } else {
            // Opted out of verifyReceipt: events from the unsigned body, marked verified: false.
            let facts = V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID)
            item.events = [V1EventBuilder().event(for: n.body, id: n.eventID, facts: facts, arrival: received)]
        }
        return commit(item, bytes: bytes, origin: origin)
    }

    // MARK: Journal and refusals

    /// Journals `item`, made of the body `bytes`. A notification whose body or event is larger than the store keeps
    /// (``StoreValueTooLarge``: an event of over 256 KiB, docs/architecture.md, "Capped values") is refused and
    /// quarantined rather than answered 503: it would be refused again on every retry.
    private func commit(_ item: JournalItem, bytes: [UInt8], origin: Origin) -> Result {
        let router = self.router
        let time = now()
        var r = Result(status: 200, body: [], version: item.version, id: item.key)
        r.bundleID = item.bundleID
        r.environment = item.environment?.rawValue
        r.notificationType = item.notificationType
        r.subtype = item.subtype
        do {
            let (outcome, done) = try store.write(bytes: item.body.count) { tx in
                try tx.journalReporting(item, routing: router.routing, now: time)
            }
            metrics.countFiltered(done)
            if case .duplicate = outcome { r.duplicate = true }
            r.body =
                Array("{\"ok\":true,\"id\":".utf8) + JSONValue.quoted(item.key)
                + Array(",\"duplicate\":\(r.duplicate)}".utf8)
            return r
        } catch let tooLarge as StoreValueTooLarge {
            return refuse(
                GatewayError(
                    .malformedBody,
                    "the notification makes a value larger than the store keeps (\(tooLarge))"
                ),
                version: item.version,
                bytes: bytes,
                at: item.receivedAt,
                origin: origin,
                claimedBundle: item.bundleID,
                claimedEnvironment: item.environment?.rawValue
            )
        } catch {
            // Nothing of this notification is stored (its transaction rolled back); Apple retries the 503.
            metrics.increment(.storeFailuresTotal, ["operation": "journal"])
            let failure = GatewayError(.storeUnavailable, "the notification could not be stored; retry later")
            r.status = Disposition(failure).status
            r.code = failure.wireCode
            r.body = Self.errorBody(failure)
            return r
        }
    }

    /// A body that authenticated but carries a configured secret where no secret belongs (anywhere but a V1 body's
    /// `password`): Apple never sends one, and journaling it would store the secret. Refused as malformed; its
    /// quarantined copy has the secret replaced.
    private func refuseCarriedSecret(version: Generation, bytes: [UInt8], at received: Int64, origin: Origin) -> Result
    {
        refuse(
            GatewayError(.malformedBody, "the body carries a configured secret outside a V1 password member"),
            version: version,
            bytes: bytes,
            at: received,
            origin: origin
        )
    }

    /// Answers a refusal and quarantines the body in the lane its code says (docs/architecture.md). Every configured
    /// secret is replaced in the body, in what it claims and in the error's message (which may quote a member name)
    /// before anything is stored, logged or answered; claims and message are then clipped. The value of any
    /// `password` member is dropped too — a V1 body for a bundle not configured carries a secret the gateway does not
    /// know — keeping only its SHA-256, so that a replay can match a secret configured later.
    private func refuse(
        _ error: GatewayError,
        version: Generation?,
        bytes: [UInt8],
        at received: Int64,
        origin: Origin,
        claimedBundle: String? = nil,
        claimedEnvironment: String? = nil
    ) -> Result {
        var error = error
        error.reason = ClaimedText.clip(redactor.redact(error.reason), limit: 300)
        let disposition = Disposition(error, version: version)
        let fullCode = error.wireCode
        let message = error.reason
        var r = Result(status: disposition.status, body: Self.errorBody(error), code: fullCode, version: version)
        r.bundleID = ClaimedText.clip(claimedBundle.map(redactor.redact))
        r.environment = ClaimedText.clip(claimedEnvironment.map(redactor.redact))
        guard let lane = disposition.lane, origin.quarantinesRefusals else { return r }
        var record = QuarantineRecord(
            lane: lane == .genuine ? .genuine : .untrusted,
            receivedAt: received,
            version: version,
            code: fullCode,
            message: message,
            bundleID: r.bundleID,
            environment: r.environment,
            body: bytes
        )
        if version == .v1 {
            record.passwordFingerprint = V1Adapter.passwordFingerprint(body: bytes)
            record.body = Envelope.rawBody(bytes).map { $0.canonicalBytes() } ?? []
        }
        record.body = SecretRedactor.redactingPasswordValues(redactor.redact(record.body))
        let cap = limits.cap(lane)
        let row = record
        let once = origin.quarantinesOnce
        let outcome = try? store.write(bytes: row.body.count) { tx in try tx.quarantine(row, cap: cap, once: once) }
        switch outcome {
        case .held?:
            r.quarantine = .held(lane: lane)
        case .stored(_, let evicted)?:
            r.quarantine = .stored(lane: lane)
            metrics.increment(.quarantinedTotal, ["lane": lane.rawValue])
            metrics.set(.quarantineLaneFull, ["lane": lane.rawValue], 0)
            if evicted > 0 { metrics.increment(.quarantineDroppedTotal, ["lane": lane.rawValue], by: Double(evicted)) }
        case .full?:
            r.quarantine = .notStored(lane: lane)
            metrics.increment(.quarantineFullTotal, ["lane": lane.rawValue])
            metrics.set(.quarantineLaneFull, ["lane": lane.rawValue], 1)
        case nil:
            r.quarantine = .notStored(lane: lane)
            metrics.increment(.quarantineStoreFailuresTotal, ["lane": lane.rawValue])
        }
        return r
    }

    /// `{"error":{"code","cause"?,"message"}}`: every error answer of the gateway.
    static func errorBody(_ error: GatewayError) -> [UInt8] {
        errorBody(code: error.code.rawValue, cause: error.cause?.rawValue, message: error.reason)
    }

    static func errorBody(code: String, cause: String? = nil, message: String) -> [UInt8] {
        var out = Array("{\"error\":{\"code\":".utf8) + JSONValue.quoted(code)
        if let cause { out += Array(",\"cause\":".utf8) + JSONValue.quoted(cause) }
        out += Array(",\"message\":".utf8) + JSONValue.quoted(message) + Array("}}".utf8)
        return out
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
