internal import Canonical
internal import Crypto
internal import FoundationEssentials
public import V1Adapter
public import V2Adapter
internal import WireJSON

/// `POST /notifications` (DESIGN ch. 1): detect the version, authenticate with what is local and fast, journal the
/// body (and V2 events) durably, answer. Nothing slow happens here: verifyReceipt, delivery and API look-ups run
/// later from the store.
public final class NotificationIngest: Sendable {
    /// The outcome of one body, for the HTTP answer, the log line and the metrics.
    public struct Result: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var code: String?
        public var version: String?
        public var id: String?
        public var duplicate = false
        public var bundleID: String?
        public var environment: String?
        public var notificationType: String?
        public var subtype: String?
        public var leafSerial: String?
    }

    public struct Limits: Sendable {
        public var untrustedQuarantineCap = 1_000
        public var genuineQuarantineCap = 10_000
        public var maxNotificationAgeMillis: Int64 = 10 * 86_400_000
        public init() {}
    }

    let v1: V1Adapter
    let v2: V2Adapter
    let writer: JournalWriter
    let router: Router
    let limits: Limits
    let metrics: Metrics
    let now: @Sendable () -> Int64

    public init(v1: V1Adapter, v2: V2Adapter, writer: JournalWriter, router: Router, limits: Limits, metrics: Metrics,
                now: @escaping @Sendable () -> Int64) {
        self.v1 = v1
        self.v2 = v2
        self.writer = writer
        self.router = router
        self.limits = limits
        self.metrics = metrics
        self.now = now
    }

    /// Handles one body. `live` applies the freshness window (quarantine replays and backfills do not).
    public func handle(_ bytes: [UInt8], origin: String = "live") -> Result {
        let received = now()
        let inbound: InboundBody
        do { inbound = try InboundBody.classify(bytes, allowBareTokens: false) } catch {
            return refuse(code: error.code.rawValue, message: error.reason, version: nil, bytes: bytes, at: received)
        }
        switch inbound {
        case .v2Notification(let token):
            return handleV2(token, bytes: bytes, origin: origin, received: received)
        case .v1Notification:
            return handleV1(bytes, origin: origin, received: received)
        case .signedTransaction, .signedRenewalInfo, .verifyReceiptResponse:
            return refuse(code: "unknown_version", message: "not a notification", version: nil, bytes: bytes, at: received)
        }
    }

    // MARK: V2

    private func handleV2(_ token: [UInt8], bytes: [UInt8], origin: String, received: Int64) -> Result {
        let started = ContinuousClock.now
        let verified: VerifiedNotificationV2
        do {
            verified = try v2.verifyNotification(
                signedPayload: token, now: received,
                freshness: origin == "live" ? V2Adapter.Freshness(maxAgeMillis: limits.maxNotificationAgeMillis) : nil)
        } catch {
            metrics.observe("iapgw_verify_seconds", ["version": "v2"], seconds(since: started))
            var r = refuse(code: error.code.rawValue, cause: error.cause?.rawValue, message: error.reason, version: "v2", bytes: bytes,
                           at: received)
            if let claim = Self.claimedIdentity(token) { (r.bundleID, r.environment) = claim }
            return r
        }
        metrics.observe("iapgw_verify_seconds", ["version": "v2"], seconds(since: started))
        var item = JournalItem(key: verified.payload.notificationUUID ?? "", version: "v2", receivedAt: received, body: bytes)
        item.origin = origin
        item.bundleID = verified.bundleID
        item.environment = verified.environment
        item.notificationType = verified.payload.notificationType
        item.subtype = verified.payload.subtype
        item.leafSerial = verified.leafSerial
        item.events = verified.canonicalEvents()
        guard !item.key.isEmpty else {
            return refuse(code: "malformed", message: "notification has no notificationUUID", version: "v2", bytes: bytes, at: received)
        }
        var r = commit(item)
        r.leafSerial = verified.leafSerial
        return r
    }

    /// What an unverified V2 token claims (bundle, environment), for the log line of a refusal only.
    static func claimedIdentity(_ token: [UInt8]) -> (String?, String?)? {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = try? Base64.decode(parts[1], alphabet: .url),
            case .object(let p)? = try? JSONParser.parse(bytes), case .object(let d)? = p["data"]
        else { return nil }
        return (d["bundleId"]?.stringValue, d["environment"]?.stringValue)
    }

    // MARK: V1

    private func handleV1(_ bytes: [UInt8], origin: String, received: Int64) -> Result {
        let n: AuthenticatedV1Notification
        do { n = try v1.authenticate(body: bytes) } catch {
            var r = refuse(code: error.code.rawValue, message: error.reason, version: "v1", bytes: bytes, at: received)
            r.bundleID = V1Verification.claimedBundle(bytes)
            return r
        }
        var item = JournalItem(key: n.eventID, version: "v1", receivedAt: received, body: n.redactedBody)
        item.origin = origin
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
        return commit(item)
    }

    // MARK: Journal and refusals

    private func commit(_ item: JournalItem) -> Result {
        let router = self.router
        let time = now()
        var r = Result(status: 200, body: [], version: item.version, id: item.key)
        r.bundleID = item.bundleID
        r.environment = item.environment?.rawValue
        r.notificationType = item.notificationType
        r.subtype = item.subtype
        do {
            let outcome = try writer.perform { c in try GatewayStore.journal(item, router: router, now: time, in: c) }
            if case .duplicate = outcome { r.duplicate = true }
            r.body = Array("{\"ok\":true,\"id\":".utf8) + JSONValue.quoted(item.key)
                + Array(",\"duplicate\":\(r.duplicate)}".utf8)
            return r
        } catch {
            r.status = 503
            r.code = "store_unavailable"
            r.body = Self.errorBody("store_unavailable", "the notification could not be stored; retry later")
            return r
        }
    }

    private func refuse(code: String, cause: String? = nil, message: String, version: String?, bytes: [UInt8], at received: Int64) -> Result {
        let disposition = Disposition.forCode(code, cause: cause)
        if let lane = disposition.lane {
            var record = QuarantineRecord(
                lane: lane == .genuine ? .genuine : .untrusted, receivedAt: received, version: version,
                code: cause.map { "\(code):\($0)" } ?? code, message: message, body: bytes)
            if version == "v1" {
                // Never keep a presented password: its fingerprint lets a replay match a secret configured later.
                record.passwordFingerprint = V1Adapter.passwordFingerprint(body: bytes)
                record.body = Envelope.rawBody(bytes).map { $0.canonicalBytes() } ?? []
                record.bundleID = V1Verification.claimedBundle(bytes)
            }
            let cap = lane == .genuine ? limits.genuineQuarantineCap : limits.untrustedQuarantineCap
            let row = record
            let dropped = try? writer.perform { c in try GatewayStore.quarantine(row, cap: cap, in: c) }
            metrics.increment("iapgw_quarantined_total", ["lane": lane.rawValue])
            if let dropped, dropped > 0 { metrics.increment("iapgw_quarantine_dropped_total", ["lane": lane.rawValue], by: Double(dropped)) }
        }
        var r = Result(status: disposition.status, body: Self.errorBody(code, message, cause: cause), code: code, version: version)
        r.code = cause.map { "\(code):\($0)" } ?? code
        return r
    }

    static func errorBody(_ code: String, _ message: String, cause: String? = nil) -> [UInt8] {
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
