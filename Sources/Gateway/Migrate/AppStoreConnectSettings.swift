public import AppStoreConnect
public import Canonical

/// The switch's App Store Connect: ``AppleNotificationSettings`` on the App Store Connect API client, one attempt per
/// call (the switch decides what to do about a failure). A URL Apple holds without a version reads as V1.
public struct AppStoreConnectSettings: AppleNotificationSettings {
    let client: AppStoreConnectClient

    public init(client: AppStoreConnectClient) { self.client = client }

    public func app(bundleID: String) async throws(AppleSettingsError) -> AppleAppSettings {
        do { return Self.settings(try await client.findApp(bundleID: bundleID)) } catch { throw Self.map(error) }
    }

    public func setVersion(
        _ version: Generation,
        environment: AppStoreEnvironment,
        appID: String
    ) async throws(AppleSettingsError)
        -> AppleAppSettings
    {
        do {
            return Self.settings(
                try await client.setNotificationVersion(
                    NotificationVersion(version),
                    environment: environment,
                    appID: appID
                )
            )
        } catch {
            throw Self.map(error)
        }
    }

    static func settings(_ app: AppStoreConnectApp) -> AppleAppSettings {
        var urls: [AppStoreEnvironment: String] = [:]
        var versions: [AppStoreEnvironment: Generation] = [:]
        for environment in [AppStoreEnvironment.production, .sandbox] {
            urls[environment] = app.url(environment)
            versions[environment] = app.version(environment)?.generation
        }
        return AppleAppSettings(appID: app.id, urls: urls, versions: versions)
    }

    static func map(_ error: AppStoreConnectError) -> AppleSettingsError {
        AppleSettingsError(code: error.code.rawValue, message: error.reason, retryAfterMillis: error.retryAfterMillis)
    }
}
