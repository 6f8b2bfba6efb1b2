public import Canonical

/// What Apple is set to send for an app, per environment: the URL its notifications go to and their version, as App
/// Store Connect holds them.
public struct AppleAppSettings: Sendable, Equatable {
    /// App Store Connect's id of the app.
    public var appID: String
    public var urls: [AppStoreEnvironment: String]
    /// A URL set without a version gets V1 (the version Apple sent before V2 existed).
    public var versions: [AppStoreEnvironment: Generation]

    public init(appID: String, urls: [AppStoreEnvironment: String], versions: [AppStoreEnvironment: Generation]) {
        (self.appID, self.urls, self.versions) = (appID, urls, versions)
    }

    public func version(_ environment: AppStoreEnvironment) -> Generation { versions[environment] ?? .v1 }
}

/// Why Apple refused or could not answer, in the switch's own words: `unauthorized`, `forbidden`, `not_found`,
/// `conflict`, `rate_limited` (with Apple's `Retry-After`), `unavailable`, `malformed`. `message` never holds a token,
/// a key or a body.
public struct AppleSettingsError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var retryAfterMillis: Int64?

    public init(code: String, message: String, retryAfterMillis: Int64? = nil) {
        (self.code, self.message, self.retryAfterMillis) = (code, message, retryAfterMillis)
    }

    public var description: String { "\(code): \(message)" }

    /// Whether Apple certainly did not act on the request: it refused it (a 4xx: `unauthorized`, `forbidden`,
    /// `not_found`, `conflict`, `rate_limited`, `bad_request`) or it was never sent (`invalid_key`,
    /// `no_credentials`). After any other failure — no answer, a 5xx, an answer that is not Apple's or names another
    /// app — a change may have been made: only reading the app back tells.
    public var leavesAppleUnchanged: Bool { Self.unchangedCodes.contains(code) }

    static let unchangedCodes: Set<String> = [
        "unauthorized", "forbidden", "not_found", "conflict", "rate_limited", "bad_request", "invalid_key",
        "no_credentials",
    ]
}

/// The App Store Connect API as the switch needs it (docs/operations.md, "Migrating a bundle"): read an app's
/// notification settings and set one environment's version. Live: ``AppStoreConnectSettings``; tests use the
/// simulator's fake App Store Connect through the same client.
public protocol AppleNotificationSettings: Sendable {
    func app(bundleID: String) async throws(AppleSettingsError) -> AppleAppSettings
    /// Sets `environment`'s notification version; returns the settings as Apple answers them.
    func setVersion(
        _ version: Generation,
        environment: AppStoreEnvironment,
        appID: String
    ) async throws(AppleSettingsError)
        -> AppleAppSettings
}

/// Apple's test notification (App Store Server API): the proof that Apple sends V2 to this gateway.
public protocol TestNotificationProbe: Sendable {
    /// Asks Apple to send a test notification to the app's URL for `environment`; its token.
    func request(bundleID: String, environment: AppStoreEnvironment) async throws(AppleSettingsError) -> String
    /// What became of it: the `notificationUUID` of the notification Apple sent (nil while it sent none), and the
    /// results of its delivery attempts.
    func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        token: String
    ) async throws(AppleSettingsError)
        -> (notificationID: String?, attempts: [String])
}
