public import AppStoreConnect
public import Canonical
internal import Crypto

/// What the simulated App Store Connect holds (``SimWorld/appStoreConnect``, in the shared state file so every
/// `simulate` process sees the same): per app its notification settings, the lag applied to a version change, and
/// the failures queued for the next App Store Connect API calls.
public struct SimAppStoreConnect: Sendable, Codable, Hashable {
    /// Per bundle id, the apps whose settings were set or asked for.
    public var apps: [String: SimConnectApp] = [:]
    /// Answers for the next App Store Connect API calls, first in first out (each instead of the real answer).
    public var failures: [SimConnectFailure] = []
    /// How a version change is honoured: nil at once; otherwise late (``SimConnectLag``).
    public var lag: SimConnectLag?
    /// Bundles registered without a setting of their own (``FakeAppStoreConnect/registerApp(bundleID:)``).
    public var registered: Set<String> = []
    /// How long each API answer takes, in milliseconds (0: at once): an App Store Connect that is slow to answer.
    public var delayMillis = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case apps, failures, lag, registered
        case delayMillis = "delay_ms"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        apps = try c.decodeIfPresent([String: SimConnectApp].self, forKey: .apps) ?? [:]
        failures = try c.decodeIfPresent([SimConnectFailure].self, forKey: .failures) ?? []
        lag = try c.decodeIfPresent(SimConnectLag.self, forKey: .lag)
        registered = try c.decodeIfPresent(Set<String>.self, forKey: .registered) ?? []
        delayMillis = try c.decodeIfPresent(Int.self, forKey: .delayMillis) ?? 0
    }
}

/// One app's notification settings in App Store Connect.
public struct SimConnectApp: Sendable, Codable, Hashable {
    public var bundleID: String
    public var production = SimConnectSetting()
    public var sandbox = SimConnectSetting()

    public init(bundleID: String) { self.bundleID = bundleID }

    /// App Store Connect's id of the app: a stable 10-digit number per bundle id (from its SHA-256), the same in
    /// every process and run.
    public var id: String { Self.id(bundleID: bundleID) }

    public static func id(bundleID: String) -> String {
        let digest = SHA256.hash(Array(bundleID.utf8))
        let n = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return String(1_000_000_000 + n % 9_000_000_000)
    }

    /// The setting of `environment` (production or sandbox); nil for any other.
    public subscript(environment: AppStoreEnvironment) -> SimConnectSetting? {
        get {
            switch environment {
            case .production: production
            case .sandbox: sandbox
            default: nil
            }
        }
        set {
            guard let newValue else { return }
            switch environment {
            case .production: production = newValue
            case .sandbox: sandbox = newValue
            default: break
            }
        }
    }
}

/// The URL and version of one environment of an app, and a version change Apple has not fully honoured yet.
public struct SimConnectSetting: Sendable, Codable, Hashable {
    /// Set through the API; nil: the URL the fake sends notifications to (`serve-apple --notify`), if any.
    public var url: String?
    /// The version App Store Connect reports (`V1` until changed).
    public var version = NotificationVersion.v1
    /// After a change made under a lag: the notifications still to be sent in the old version (or alternately).
    public var pending: Transition?

    public init() {}

    /// A version change still being honoured.
    public struct Transition: Sendable, Codable, Hashable {
        /// The version before the change.
        public var old: NotificationVersion
        /// Notifications still to be sent under the transition.
        public var remaining: Int
        /// Alternate (old, new, old, …) instead of keeping the old version.
        public var mixed: Bool
        /// Notifications sent under the transition so far.
        public var sent = 0
    }

    /// The version the next notification is sent in.
    public var effectiveVersion: NotificationVersion {
        guard let p = pending, p.remaining > 0 else { return version }
        return !p.mixed || p.sent % 2 == 0 ? p.old : version
    }

    /// Counts one notification sent; returns the version it was sent in.
    public mutating func send() -> NotificationVersion {
        let v = effectiveVersion
        if var p = pending {
            p.sent += 1
            p.remaining -= 1
            pending = p.remaining > 0 ? p : nil
        }
        return v
    }

    /// Changes the version as a PATCH does: under `lag`, the old version goes on being sent for a while. Setting
    /// the version it already has changes nothing.
    public mutating func set(_ new: NotificationVersion, lag: SimConnectLag?) {
        guard new != version else {
            // Set again without a lag ("immediately"): a change still being honoured late is honoured now.
            if lag == nil { pending = nil }
            return
        }
        let old = effectiveVersion
        version = new
        if let lag, lag.notifications > 0, old != new {
            pending = Transition(old: old, remaining: lag.notifications, mixed: lag.mixed)
        } else {
            pending = nil
        }
    }
}

/// "Apple honours the PATCH late": after a version change, the next ``notifications`` notifications of that app and
/// environment are still sent in the old version (``mixed``: alternately in the old and the new, old first).
public struct SimConnectLag: Sendable, Codable, Hashable {
    public var notifications: Int
    public var mixed: Bool
    public init(notifications: Int, mixed: Bool = false) { (self.notifications, self.mixed) = (notifications, mixed) }
}

/// An answer queued for an App Store Connect API call: an HTTP status (401, 403, 404, 409, 429, 500, …) with
/// Apple's JSON:API error body, and `Retry-After` seconds for a 429 when given. With ``applied`` the call is carried
/// out first and only its answer is lost: a change Apple made whose answer never arrived. With ``method`` it answers
/// the next call of that method only (`PATCH`: the change, not the reads before it).
public struct SimConnectFailure: Sendable, Codable, Hashable {
    public var status: Int
    public var retryAfterSeconds: Int?
    public var applied = false
    public var method: String?
    public init(status: Int, retryAfterSeconds: Int? = nil, applied: Bool = false, method: String? = nil) {
        (self.status, self.retryAfterSeconds, self.applied, self.method) = (status, retryAfterSeconds, applied, method)
    }

    enum CodingKeys: String, CodingKey { case status, retryAfterSeconds, applied, method }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decode(Int.self, forKey: .status)
        retryAfterSeconds = try c.decodeIfPresent(Int.self, forKey: .retryAfterSeconds)
        applied = try c.decodeIfPresent(Bool.self, forKey: .applied) ?? false
        method = try c.decodeIfPresent(String.self, forKey: .method)
    }

    /// Whether it answers a call of `method`.
    func answers(_ method: String) -> Bool { self.method.map { $0 == method } ?? true }
}
