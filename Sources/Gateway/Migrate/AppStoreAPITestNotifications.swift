public import Canonical
internal import Crypto
public import ServiceKit
internal import V2Adapter
internal import WireJSON

/// The switch's probe on the App Store Server API: Request a Test Notification and Get Test Notification Status, one
/// attempt per call (the probe paces itself).
public struct AppStoreAPITestNotifications: TestNotificationProbe {
    let source: AppStoreAPIClients

    public init(source: AppStoreAPIClients) { self.source = source.oneAttemptPerCall }

    public func request(bundleID: String, environment: AppStoreEnvironment) async throws(AppleSettingsError) -> String {
        let client = try client(bundleID)
        do { return try await client.requestTestNotification(environment: environment) } catch { throw Self.map(error) }
    }

    public func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        token: String
    ) async throws(AppleSettingsError)
        -> (notificationID: String?, attempts: [String])
    {
        let client = try client(bundleID)
        let answer: CheckTestNotificationResponse
        do { answer = try await client.testNotificationStatus(token: token, environment: environment) } catch {
            throw Self.map(error)
        }
        return (Self.notificationID(answer.signedPayload), answer.sendAttempts.map(\.sendAttemptResult))
    }

    func client(_ bundleID: String) throws(AppleSettingsError) -> AppStoreAPIClient {
        guard let client = source.client(for: bundleID) else {
            throw AppleSettingsError(code: "no_credentials", message: "no App Store Server API client for \(bundleID)")
        }
        return client
    }

    /// The `notificationUUID` a signed payload claims, read without verifying: only looked up in the journal, which
    /// holds it only if the notification verified when it arrived.
    static func notificationID(_ signedPayload: String) -> String? {
        let parts = Array(signedPayload.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = try? Base64.decode(parts[1], alphabet: .url),
            case .object(let payload)? = try? JSONParser.parse(bytes)
        else { return nil }
        return payload["notificationUUID"]?.stringValue
    }

    static func map(_ error: AppStoreAPIError) -> AppleSettingsError {
        let code: String
        switch error.code {
        case .unauthorized: code = "unauthorized"
        case .notFound: code = "not_found"
        case .rateLimited: code = "rate_limited"
        case .appleUnavailable: code = "unavailable"
        default: code = error.code.rawValue
        }
        let retry = error.retryAfter.map {
            $0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000
        }
        return AppleSettingsError(code: code, message: error.message, retryAfterMillis: retry)
    }
}
