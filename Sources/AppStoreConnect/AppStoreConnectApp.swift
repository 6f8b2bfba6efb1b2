public import Canonical
internal import WireJSON

/// An app as App Store Connect describes it to the switch: its id, its bundle id and, per environment, the URL
/// Apple sends App Store Server Notifications to and the version it sends (`subscriptionStatusUrl`,
/// `subscriptionStatusUrlVersion`; `…ForSandbox` for sandbox). nil where App Store Connect has none set.
public struct AppStoreConnectApp: Sendable, Equatable {
    /// App Store Connect's id of the app (its Apple ID, digits).
    public var id: String
    public var bundleID: String
    public var productionURL: String?
    public var productionVersion: NotificationVersion?
    public var sandboxURL: String?
    public var sandboxVersion: NotificationVersion?

    public init(
        id: String,
        bundleID: String,
        productionURL: String? = nil,
        productionVersion: NotificationVersion? = nil,
        sandboxURL: String? = nil,
        sandboxVersion: NotificationVersion? = nil
    ) {
        (self.id, self.bundleID, self.productionURL, self.productionVersion, self.sandboxURL, self.sandboxVersion) =
            (id, bundleID, productionURL, productionVersion, sandboxURL, sandboxVersion)
    }

    /// The URL Apple sends `environment`'s notifications to; nil when none is set (or for an environment other than
    /// production and sandbox, which has none).
    public func url(_ environment: AppStoreEnvironment) -> String? {
        switch environment {
        case .production: productionURL
        case .sandbox: sandboxURL
        default: nil
        }
    }

    /// The version Apple sends `environment`'s notifications in; nil when App Store Connect reports none.
    public func version(_ environment: AppStoreEnvironment) -> NotificationVersion? {
        switch environment {
        case .production: productionVersion
        case .sandbox: sandboxVersion
        default: nil
        }
    }

    /// The app of an `apps` resource; `malformed` when it is not one (another type, no id, no bundle id).
    public init(resource: AppResource) throws(AppStoreConnectError) {
        guard resource.type == AppResource.type else {
            throw AppStoreConnectError(
                .malformed,
                "App Store Connect answered a resource of type \(Clip.printable(resource.type, 40)), not apps"
            )
        }
        guard !resource.id.isEmpty else {
            throw AppStoreConnectError(.malformed, "App Store Connect answered an app without an id")
        }
        guard let a = resource.attributes, let bundleID = a.bundleID, !bundleID.isEmpty else {
            throw AppStoreConnectError(
                .malformed,
                "App Store Connect answered app \(Clip.printable(resource.id, 40)) without its bundleId"
            )
        }
        self.init(
            id: resource.id,
            bundleID: bundleID,
            productionURL: a.subscriptionStatusURL,
            productionVersion: a.subscriptionStatusURLVersion,
            sandboxURL: a.subscriptionStatusURLForSandbox,
            sandboxVersion: a.subscriptionStatusURLVersionForSandbox
        )
    }

    /// The `apps` resource describing this app (the simulator's fake answers with it).
    public var resource: AppResource {
        AppResource(
            id: id,
            attributes: AppResource.Attributes(
                bundleID: bundleID,
                subscriptionStatusURL: productionURL,
                subscriptionStatusURLVersion: productionVersion,
                subscriptionStatusURLForSandbox: sandboxURL,
                subscriptionStatusURLVersionForSandbox: sandboxVersion
            )
        )
    }
}
