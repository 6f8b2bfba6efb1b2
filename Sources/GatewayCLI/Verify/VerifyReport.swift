public import Canonical
internal import V2Adapter
public import WireJSON

/// One line of `iap-gateway verify` output (docs/architecture.md, "Command line").
public struct VerifyReport: Encodable, Sendable {
    /// A stable error code, the inner code for nested-token failures, and a message without payload bytes.
    public struct ErrorBody: Encodable, Sendable, Hashable {
        public var code: String
        public var cause: String?
        public var message: String

        enum CodingKeys: String, CodingKey { case code, cause, message }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(code, forKey: .code)
            try c.encodeIfPresent(cause, forKey: .cause)
            try c.encode(message, forKey: .message)
        }
    }

    public var file: String?
    public var ok: Bool
    /// `v2` or `v1`.
    public var version: String?
    /// `notification`, `transaction` or `renewal_info`.
    public var kind: String?
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    public var leafSerial: String?
    public var signedDate: Int64?
    public var events: [CanonicalEvent]?
    /// For a bare token: its verified payload as Apple sent it.
    public var token: JSONValue?
    /// V1: the event id (also each event's id) and the name of the configured secret that matched.
    public var eventID: String?
    public var secretName: String?
    /// verifyReceipt's status, when an answer was involved.
    public var appleStatus: Int?
    /// What a verifyReceipt answer says per subscription.
    public var snapshots: [OutcomeSnapshot]?
    public var error: ErrorBody?

    enum CodingKeys: String, CodingKey {
        case file, ok, version, kind
        case bundleID = "bundle_id"
        case environment
        case leafSerial = "leaf_serial"
        case signedDate = "signed_date"
        case events, token, error
        case eventID = "event_id"
        case secretName = "secret_name"
        case appleStatus = "apple_status"
        case snapshots
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(file, forKey: .file)
        try c.encode(ok, forKey: .ok)
        if ok {
            try c.encode(version, forKey: .version)
            try c.encode(kind, forKey: .kind)
            try c.encode(bundleID, forKey: .bundleID)
            try c.encode(environment, forKey: .environment)
            try c.encodeIfPresent(leafSerial, forKey: .leafSerial)
            try c.encode(signedDate, forKey: .signedDate)
            try c.encode(events ?? [], forKey: .events)
            try c.encodeIfPresent(token, forKey: .token)
            try c.encodeIfPresent(eventID, forKey: .eventID)
            try c.encodeIfPresent(secretName, forKey: .secretName)
            try c.encodeIfPresent(appleStatus, forKey: .appleStatus)
            try c.encodeIfPresent(snapshots, forKey: .snapshots)
        } else {
            try c.encodeIfPresent(appleStatus, forKey: .appleStatus)
            try c.encode(error, forKey: .error)
        }
    }

    static func failure(_ code: String, cause: String? = nil, _ message: String) -> VerifyReport {
        VerifyReport(ok: false, error: ErrorBody(code: code, cause: cause, message: message))
    }

    static func failure(_ e: V2AdapterError) -> VerifyReport {
        failure(e.code.rawValue, cause: e.cause?.rawValue, e.reason)
    }
}
