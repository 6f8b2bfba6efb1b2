public import Canonical
internal import Crypto
internal import WireJSON

/// One configured app, as far as V2 needs it.
public struct V2App: Sendable, Hashable {
    public var bundleID: String
    /// Required to accept production payloads (Apple omits it in sandbox).
    public var appAppleID: Int64?
    public var environments: Set<AppStoreEnvironment>

    public init(bundleID: String, appAppleID: Int64?, environments: Set<AppStoreEnvironment>) {
        (self.bundleID, self.appAppleID, self.environments) = (bundleID, appAppleID, environments)
    }
}

/// Authenticates V2 notifications and bare signed tokens (docs/architecture.md, "V2 authentication") and applies the app policy.
///
/// Order of checks for a notification: JWS shape and payload JSON (`malformed`) → `Xcode`/`LocalTesting`
/// (`unsupported_environment`) → header, chain, signature (the ``AppleJWSVerifier`` codes) → freshness when asked
/// (`stale_notification`) → configured bundle, environment, appAppleId → every nested JWS the same way
/// (`nested_jws_invalid` with the inner code as cause). Cryptographic failures therefore always win over policy
/// ones: an app-policy code is only ever reported for data Apple really signed.
public struct V2Adapter: Sendable {
    public let verifier: AppleJWSVerifier
    /// Configured apps by bundle id; nil means "authenticate only" (`verify` without `--config`/`--bundle-id`).
    public let apps: [String: V2App]?

    public init(verifier: AppleJWSVerifier, apps: [V2App]?) {
        self.verifier = verifier
        self.apps = apps.map { Dictionary($0.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a }) }
    }

    /// Bounds on how old (or how far in the future) live traffic may be signed.
    public struct Freshness: Sendable {
        public var maxAgeMillis: Int64
        public var maxFutureMillis: Int64
        public init(maxAgeMillis: Int64 = 10 * 86_400_000, maxFutureMillis: Int64 = 5 * 60_000) {
            (self.maxAgeMillis, self.maxFutureMillis) = (maxAgeMillis, maxFutureMillis)
        }
    }

    // MARK: Notifications

    /// Verifies a `signedPayload` JWS. `now` (ms) is the fallback validation time and the freshness reference;
    /// `freshness` is for live traffic only (backfill and replay verify at the signed date without it).
    public func verifyNotification(
        signedPayload: [UInt8],
        now: Int64,
        freshness: Freshness? = nil
    ) throws(V2AdapterError) -> VerifiedNotificationV2 {
        let jws = try CompactJWS(signedPayload)
        try Self.rejectLocalEnvironments(jws.payload)
        let payload: NotificationPayloadV2 = try decodePayload(jws, as: NotificationPayloadV2.self)

        let present = [
            payload.data != nil, payload.summary != nil, payload.externalPurchaseToken != nil,
            payload.appData != nil,
        ].filter { $0 }.count
        guard present == 1 else {
            throw V2AdapterError(
                .malformed,
                present == 0
                    ? "no data, summary, externalPurchaseToken or appData"
                    : "more than one of data, summary, externalPurchaseToken, appData"
            )
        }
        let identity = Identity(payload)
        let environment = try Self.environment(identity.environment, what: "notification")

        // Parse (not yet trust) the nested transaction: its signedDate is the fallback validation time.
        let transactionJWS = try payload.data?.signedTransactionInfo.map { t throws(V2AdapterError) in
            try nested("signedTransactionInfo") { () throws(V2AdapterError) in try CompactJWS(Array(t.utf8)) }
        }
        let time: Int64
        let timeSource: EventDateSource
        if let signed = payload.signedDate {
            (time, timeSource) = (signed, .signedDate)
        } else if let t = transactionJWS?.payload["signedDate"]?.int64Value {
            (time, timeSource) = (t, .transactionSignedDate)
        } else {
            (time, timeSource) = (now, .arrival)
        }
        let leafSerial = try verifier.authenticate(jws, at: time, environment: environment)
        // Freshness after the signature: like every policy code, `stale_notification` is only reported for data Apple
        // really signed (a forged body says `bad_signature` whatever date it claims).
        if let freshness, timeSource != .arrival {
            // `time` is the payload's claim and the bounds come from a config: the window is clamped, not trapped,
            // at Int64's ends (a window reaching past them simply has no edge there).
            guard time >= now.clampedSubtracting(freshness.maxAgeMillis) else {
                throw V2AdapterError(
                    .staleNotification,
                    "signed more than \(freshness.maxAgeMillis / 86_400_000) days ago"
                )
            }
            guard time <= now.clampedAdding(freshness.maxFutureMillis) else {
                throw V2AdapterError(.staleNotification, "signed in the future")
            }
        }

        try checkApp(bundleID: identity.bundleID, appAppleID: identity.appAppleID, environment: environment)

        var transaction: TransactionPayload?
        if let transactionJWS {
            transaction = try nested("signedTransactionInfo") { () throws(V2AdapterError) in
                try Self.rejectLocalEnvironments(transactionJWS.payload)
                let t: TransactionPayload = try decodePayload(transactionJWS, as: TransactionPayload.self)
                try authenticateNested(
                    transactionJWS,
                    environment: t.environment,
                    outer: environment,
                    time: t.signedDate ?? time
                )
                try checkSameBundle(t.bundleID, outer: identity.bundleID)
                return t
            }
        }
        var renewalInfo: RenewalInfoPayload?
        if let token = payload.data?.signedRenewalInfo {
            renewalInfo = try nested("signedRenewalInfo") { () throws(V2AdapterError) in
                let j = try CompactJWS(Array(token.utf8))
                try Self.rejectLocalEnvironments(j.payload)
                let r: RenewalInfoPayload = try decodePayload(j, as: RenewalInfoPayload.self)
                try authenticateNested(j, environment: r.environment, outer: environment, time: r.signedDate ?? time)
                return r
            }
        }
        var appTransaction: AppTransactionPayload?
        if let token = payload.appData?.signedAppTransactionInfo {
            appTransaction = try nested("signedAppTransactionInfo") { () throws(V2AdapterError) in
                let j = try CompactJWS(Array(token.utf8))
                try Self.rejectLocalEnvironments(j.payload)
                let a: AppTransactionPayload = try decodePayload(j, as: AppTransactionPayload.self)
                try authenticateNested(
                    j,
                    environment: a.receiptType,
                    outer: environment,
                    time: a.signedDate ?? a.receiptCreationDate ?? time
                )
                try checkSameBundle(a.bundleID, outer: identity.bundleID)
                return a
            }
        }
        return VerifiedNotificationV2(
            payload: payload,
            transaction: transaction,
            renewalInfo: renewalInfo,
            appTransaction: appTransaction,
            bundleID: identity.bundleID,
            appAppleID: identity.appAppleID,
            environment: environment,
            leafSerial: leafSerial,
            signedTime: time,
            signedTimeSource: timeSource
        )
    }

    // MARK: Bare tokens

    /// Verifies a bare `signedTransactionInfo` (Server API responses, `verify` of a saved token).
    public func verifyTransaction(
        _ token: [UInt8],
        now: Int64
    ) throws(V2AdapterError)
        -> VerifiedTokenV2<TransactionPayload>
    {
        let jws = try CompactJWS(token)
        try Self.rejectLocalEnvironments(jws.payload)
        let t: TransactionPayload = try decodePayload(jws, as: TransactionPayload.self)
        let environment = try Self.environment(t.environment, what: "transaction")
        let serial = try verifier.authenticate(jws, at: t.signedDate ?? now, environment: environment)
        try checkApp(bundleID: t.bundleID, appAppleID: nil, environment: environment, appAppleIDKnown: false)
        return VerifiedTokenV2(
            payload: t,
            bundleID: t.bundleID,
            environment: environment,
            leafSerial: serial,
            signedDate: t.signedDate
        )
    }

    /// Verifies a bare `signedRenewalInfo`. It carries no bundle id: only its environment can be checked.
    public func verifyRenewalInfo(
        _ token: [UInt8],
        now: Int64
    ) throws(V2AdapterError)
        -> VerifiedTokenV2<RenewalInfoPayload>
    {
        let jws = try CompactJWS(token)
        try Self.rejectLocalEnvironments(jws.payload)
        let r: RenewalInfoPayload = try decodePayload(jws, as: RenewalInfoPayload.self)
        let environment = try Self.environment(r.environment, what: "renewal info")
        let serial = try verifier.authenticate(jws, at: r.signedDate ?? now, environment: environment)
        if let apps {
            guard let environment else {
                throw V2AdapterError(.environmentMismatch, "renewal info carries no environment")
            }
            guard apps.values.contains(where: { $0.environments.contains(environment) }) else {
                throw V2AdapterError(.environmentMismatch, "no configured app accepts \(environment)")
            }
        }
        return VerifiedTokenV2(
            payload: r,
            bundleID: nil,
            environment: environment,
            leafSerial: serial,
            signedDate: r.signedDate
        )
    }

    // MARK: Policy

    /// Refuses `Xcode` / `LocalTesting` data before anything else looks at it: such tokens are signed with local keys
    /// (and carry fractional-millisecond dates Apple's servers never send), so they are refused by what they claim
    /// to be, whatever else is wrong with them.
    static func rejectLocalEnvironments(_ payload: JSONObject) throws(V2AdapterError) {
        var claims = [payload["environment"], payload["receiptType"]]
        for member in ["data", "summary", "appData"] {
            if case .object(let o)? = payload[member] { claims.append(o["environment"]) }
        }
        for case .string(let s)? in claims where s == "Xcode" || s == "LocalTesting" {
            throw V2AdapterError(.unsupportedEnvironment, "data from the \(s) environment is signed locally")
        }
    }

    /// Apple's exact V2 spellings; `Xcode` and `LocalTesting` are locally signed and always refused.
    static func environment(_ raw: String?, what: String) throws(V2AdapterError) -> AppStoreEnvironment? {
        guard let raw else { return nil }
        switch raw {
        case "Production": return .production
        case "Sandbox": return .sandbox
        case "Xcode", "LocalTesting":
            throw V2AdapterError(.unsupportedEnvironment, "\(what) from the \(raw) environment is signed locally")
        default:
            return AppStoreEnvironment(rawValue: raw)
        }
    }

    private func checkApp(
        bundleID: String?,
        appAppleID: Int64?,
        environment: AppStoreEnvironment?,
        appAppleIDKnown: Bool = true
    ) throws(V2AdapterError) {
        guard let apps else { return }
        guard let bundleID, let app = apps[bundleID] else {
            throw V2AdapterError(.unknownBundle, "bundle is not configured")
        }
        guard let environment, app.environments.contains(environment) else {
            throw V2AdapterError(
                .environmentMismatch,
                "\(bundleID) is not configured for \(environment?.rawValue ?? "an unnamed environment")"
            )
        }
        if environment == .production, appAppleIDKnown {
            guard let expected = app.appAppleID else {
                throw V2AdapterError(.appAppleIDMismatch, "\(bundleID) has no app_apple_id configured for production")
            }
            guard appAppleID == expected else { throw V2AdapterError(.appAppleIDMismatch, "appAppleId does not match") }
        }
    }

    private func checkSameBundle(_ inner: String?, outer: String?) throws(V2AdapterError) {
        if let inner, let outer, inner != outer {
            throw V2AdapterError(.unknownBundle, "nested token is for another bundle than its notification")
        }
    }

    private func authenticateNested(
        _ jws: CompactJWS,
        environment raw: String?,
        outer: AppStoreEnvironment?,
        time: Int64
    ) throws(V2AdapterError) {
        let own = try Self.environment(raw, what: "nested token")
        if let own, own != outer {
            throw V2AdapterError(.environmentMismatch, "nested token environment differs from its notification")
        }
        _ = try verifier.authenticate(jws, at: time, environment: own ?? outer)
    }

    private func nested<T>(_ field: String, _ body: () throws(V2AdapterError) -> T) throws(V2AdapterError) -> T {
        do { return try body() } catch { throw V2AdapterError.nested(field, error) }
    }

    private func decodePayload<T: Decodable>(_ jws: CompactJWS, as type: T.Type) throws(V2AdapterError) -> T {
        do { return try JSONValueDecoder().decode(type, from: .object(jws.payload)) } catch {
            throw V2AdapterError(
                .malformed,
                "payload does not match Apple's schema (\(DecodingFailure.describe(error)))"
            )
        }
    }
}

/// Bundle, app and environment of a notification, from whichever of its four bodies it has.
private struct Identity {
    var bundleID: String?
    var appAppleID: Int64?
    var environment: String?

    init(_ p: NotificationPayloadV2) {
        if let d = p.data {
            (bundleID, appAppleID, environment) = (d.bundleID, d.appAppleID, d.environment)
        } else if let s = p.summary {
            (bundleID, appAppleID, environment) = (s.bundleID, s.appAppleID, s.environment)
        } else if let t = p.externalPurchaseToken {
            (bundleID, appAppleID, environment) = (t.bundleID, t.appAppleID, t.impliedEnvironment)
        } else if let a = p.appData {
            (bundleID, appAppleID, environment) = (a.bundleID, a.appAppleID, a.environment)
        }
    }
}

/// A notification whose outer and nested signatures, chains and app policy all passed.
public struct VerifiedNotificationV2: Sendable, Hashable {
    public let payload: NotificationPayloadV2
    public let transaction: TransactionPayload?
    public let renewalInfo: RenewalInfoPayload?
    public let appTransaction: AppTransactionPayload?
    public let bundleID: String?
    public let appAppleID: Int64?
    public let environment: AppStoreEnvironment?
    /// Serial number of the outer token's leaf certificate (for the log line).
    public let leafSerial: String
    /// The time the chain was validated at, and where it came from.
    public let signedTime: Int64
    public let signedTimeSource: EventDateSource
}

/// A bare signed transaction or renewal info that passed.
public struct VerifiedTokenV2<Payload: Sendable & Hashable>: Sendable, Hashable {
    public let payload: Payload
    public let bundleID: String?
    public let environment: AppStoreEnvironment?
    public let leafSerial: String
    public let signedDate: Int64?
}
