public import Canonical
internal import Crypto
public import WireJSON

/// A configured shared secret: the environment variable it came from (its name, safe to log) and its value
/// (never logged, never in an error, never stored).
public struct SharedSecret: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    let value: [UInt8]

    public init(name: String, value: String) { (self.name, self.value) = (name, Array(value.utf8)) }
    public var description: String { "SharedSecret(\(name))" }
    /// The secret's text, for verifyReceipt's `password` and the legacy pass-through only.
    public var revealedValue: String { String(decoding: value, as: UTF8.self) }

    /// Whether `presented` is this secret, compared in constant time.
    public func matches(_ presented: String) -> Bool { Bytes.constantTimeEqual(Array(presented.utf8), value) }
}

/// One configured app, as far as V1 needs it.
public struct V1App: Sendable, Hashable {
    public var bundleID: String
    public var environments: Set<AppStoreEnvironment>
    /// Several for rotation; a body is accepted when its `password` equals any of them.
    public var sharedSecrets: [SharedSecret]
    /// False: events come from the unsigned body (`verified: false`) — dangerous, see the README.
    public var verifyReceipt: Bool
    /// What V1 bodies and verifyReceipt answers built from V2 say in `in_app_ownership_type` for a transaction V2 calls
    /// `ASSIGNED` (a member of an organization or a group, entitled by its own transaction): a value V1 had —
    /// `FAMILY_SHARED` ("has access without being the purchaser") by default, or `PURCHASED`
    /// (`apps[].v1_assigned_ownership`).
    public var assignedOwnership: String

    /// ``assignedOwnership``'s default.
    public static let defaultAssignedOwnership = "FAMILY_SHARED"
    /// The values ``assignedOwnership`` may take: V1's own.
    public static let assignedOwnershipValues: Set<String> = ["FAMILY_SHARED", "PURCHASED"]

    public init(
        bundleID: String,
        environments: Set<AppStoreEnvironment>,
        sharedSecrets: [SharedSecret],
        verifyReceipt: Bool = true,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) {
        self.bundleID = bundleID
        self.environments = environments
        self.sharedSecrets = sharedSecrets
        self.verifyReceipt = verifyReceipt
        self.assignedOwnership = assignedOwnership
    }
}

/// A V1 body whose shared secret matched: everything later stages need, with the secret already gone.
public struct AuthenticatedV1Notification: Sendable {
    public let body: ResponseBodyV1
    public let app: V1App
    public let bundleID: String
    public let environment: AppStoreEnvironment?
    /// Name of the configured secret that matched.
    public let secretName: String
    /// The body exactly as received except the `password` value, replaced by ``V1Adapter/secretMarker(_:)``.
    public let redactedBody: [UInt8]
    /// `v1:` + hex SHA-256 of the body without `password`, keys sorted: Apple's retries dedupe on it.
    public let eventID: String
}

/// V1 authentication (docs/architecture.md, "V1 authentication"): the body is unsigned, so the shared secret is all that authenticates it. This
/// is the fast, request-path part; entitlement comes later from verifyReceipt (``VerifyReceiptClient``) and
/// ``V1EventBuilder``.
public struct V1Adapter: Sendable {
    public let apps: [String: V1App]

    public init(apps: [V1App]) {
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The text that replaces a matched password in stored bodies: names the secret, never contains it.
    public static func secretMarker(_ name: String) -> String { SecretRedactor.marker(name) }

    /// Checks the body's `password` against the bundle's secrets in constant time per secret.
    public func authenticate(body bytes: [UInt8]) throws(V1AdapterError) -> AuthenticatedV1Notification {
        let (object, ranges): (JSONObject, [String: Range<Int>])
        do { (object, ranges) = try JSONParser.parseObjectWithValueRanges(bytes) } catch {
            throw V1AdapterError(.malformedBody, "body is not a JSON object (\(error))")
        }
        let body: ResponseBodyV1
        do { body = try JSONValueDecoder().decode(ResponseBodyV1.self, from: .object(object)) } catch {
            throw V1AdapterError(
                .malformedBody,
                "body does not match Apple's responseBodyV1 (\(DecodingFailure.describe(error)))"
            )
        }
        guard body.notificationType?.isEmpty == false else {
            throw V1AdapterError(.malformedBody, "notification_type is missing")
        }
        guard let bundle = body.bundleID, let app = apps[bundle] else {
            throw V1AdapterError(.unknownBundle, "bundle is not configured")
        }
        guard let password = body.password, let range = ranges["password"] else {
            throw V1AdapterError(.badSharedSecret, "no password in the body")
        }
        let presented = Array(password.utf8)
        var matched: SharedSecret?
        for secret in app.sharedSecrets where Bytes.constantTimeEqual(presented, secret.value) && matched == nil {
            matched = secret
        }
        guard let matched else {
            throw V1AdapterError(.badSharedSecret, "password matches no configured shared secret")
        }

        let environment = Self.environment(body)
        if let environment, !app.environments.contains(environment) {
            throw V1AdapterError(.environmentMismatch, "\(bundle) is not configured for \(environment)")
        }
        var redacted = Array(bytes[..<range.lowerBound])
        redacted += JSONValue.quoted(Self.secretMarker(matched.name))
        redacted += bytes[range.upperBound...]
        return AuthenticatedV1Notification(
            body: body,
            app: app,
            bundleID: bundle,
            environment: environment,
            secretName: matched.name,
            redactedBody: redacted,
            eventID: Self.eventID(object)
        )
    }

    /// `v1:` + hex SHA-256 of the canonical serialization of `object` without its top-level `password`.
    public static func eventID(_ object: JSONObject) -> String {
        let withoutPassword = JSONObject(object.members.filter { $0.key != "password" })
        return "v1:" + SHA256.hex(JSONValue.object(withoutPassword).canonicalBytes())
    }

    /// Which bundle a V1 body claims, read without trusting or authenticating it — for log lines, quarantine
    /// records and picking the app an ad-hoc secret applies to. It is exactly the rule ``authenticate(body:)``
    /// applies, ``ResponseBodyV1/bundleID``: the top-level `bid`, else the pre-2021 `latest_receipt_info`'s (one
    /// object, or the first of an array), else `latest_expired_receipt_info`'s (pre-2021 `CANCEL` and
    /// auto-renew-off bodies of expired subscriptions name their bundle nowhere else). `unified_receipt` is not
    /// read: its transactions carry no `bid`, and bodies that have it name the bundle at the top.
    ///
    /// Only the three members the rule reads are decoded, and of the transactions only their `bid`, so a body the
    /// adapter would refuse as malformed for another member still has its claim read. Nil when the bytes are not a
    /// JSON object or name no bundle.
    public static func claimedBundle(body bytes: [UInt8]) -> String? {
        guard case .object(let object)? = try? JSONParser.parse(bytes) else { return nil }
        func bidOnly(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let o): return .object(JSONObject(o.members.filter { $0.key == "bid" }))
            case .array(let items): return .array(items.map(bidOnly))
            default: return value
            }
        }
        let decoder = JSONValueDecoder()
        var claim = ResponseBodyV1(notificationType: nil, password: nil, environment: nil)
        claim.bid = object["bid"]?.stringValue
        claim.latestReceiptInfo = object["latest_receipt_info"].flatMap {
            try? decoder.decode(OneOrMany<V1Transaction>.self, from: bidOnly($0))
        }
        claim.latestExpiredReceiptInfo = object["latest_expired_receipt_info"].flatMap {
            try? decoder.decode(V1Transaction.self, from: bidOnly($0))
        }
        return claim.bundleID
    }

    /// SHA-256 (hex) of the presented password, for the quarantine: lets a replay match a secret configured later
    /// without ever storing the password. Nil when the body has none.
    public static func passwordFingerprint(body bytes: [UInt8]) -> String? {
        guard case .object(let o)? = try? JSONParser.parse(bytes), case .string(let p)? = o["password"] else {
            return nil
        }
        return SHA256.hex(Array(p.utf8))
    }

    /// The body Apple sent, rebuilt from a stored redacted body: the marker replaced by the named secret's value.
    /// Nil when the marker or the secret is missing. (Apple writes the 32-hex-digit secret without escapes, so the
    /// bytes come back identical.)
    public static func restore(redactedBody: [UInt8], secrets: [SharedSecret]) -> [UInt8]? {
        guard let (object, ranges) = try? JSONParser.parseObjectWithValueRanges(redactedBody),
            case .string(let marker)? = object["password"], let range = ranges["password"],
            let secret = secrets.first(where: { secretMarker($0.name) == marker })
        else { return nil }
        return Array(redactedBody[..<range.lowerBound]) + JSONValue.quoted(secret.revealedValue)
            + redactedBody[range.upperBound...]
    }

    /// `PROD` / `Production` / `Sandbox` at the top, else `unified_receipt.environment`.
    static func environment(_ body: ResponseBodyV1) -> AppStoreEnvironment? {
        (body.environment ?? body.unifiedReceipt?.environment).flatMap(AppStoreEnvironment.init(appleValue:))
    }
}
