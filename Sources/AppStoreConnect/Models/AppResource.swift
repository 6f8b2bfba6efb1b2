/// Apple's `App` resource (JSON:API) with the attributes the switch reads: `{"type": "apps", "id", "attributes":
/// {"bundleId", "subscriptionStatusUrl", "subscriptionStatusUrlVersion", "subscriptionStatusUrlForSandbox",
/// "subscriptionStatusUrlVersionForSandbox", …}, "links": {"self"}}`. Attributes it does not name (`name`, `sku`,
/// …) are ignored when read. Shared by the client and the simulator's fake, so both speak one dialect.
public struct AppResource: Sendable, Hashable, Codable {
    public static let type = "apps"

    public struct Attributes: Sendable, Hashable, Codable {
        public var bundleID: String?
        public var name: String?
        public var subscriptionStatusURL: String?
        public var subscriptionStatusURLVersion: NotificationVersion?
        public var subscriptionStatusURLForSandbox: String?
        public var subscriptionStatusURLVersionForSandbox: NotificationVersion?

        enum CodingKeys: String, CodingKey {
            case name
            case bundleID = "bundleId"
            case subscriptionStatusURL = "subscriptionStatusUrl"
            case subscriptionStatusURLVersion = "subscriptionStatusUrlVersion"
            case subscriptionStatusURLForSandbox = "subscriptionStatusUrlForSandbox"
            case subscriptionStatusURLVersionForSandbox = "subscriptionStatusUrlVersionForSandbox"
        }

        public init(
            bundleID: String?,
            name: String? = nil,
            subscriptionStatusURL: String? = nil,
            subscriptionStatusURLVersion: NotificationVersion? = nil,
            subscriptionStatusURLForSandbox: String? = nil,
            subscriptionStatusURLVersionForSandbox: NotificationVersion? = nil
        ) {
            self.bundleID = bundleID
            self.name = name
            self.subscriptionStatusURL = subscriptionStatusURL
            self.subscriptionStatusURLVersion = subscriptionStatusURLVersion
            self.subscriptionStatusURLForSandbox = subscriptionStatusURLForSandbox
            self.subscriptionStatusURLVersionForSandbox = subscriptionStatusURLVersionForSandbox
        }

        /// The four notification settings are written even when unset (`null`), as Apple answers the fields asked
        /// for; `name` only when known.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(bundleID, forKey: .bundleID)
            try c.encodeIfPresent(name, forKey: .name)
            try c.encode(subscriptionStatusURL, forKey: .subscriptionStatusURL)
            try c.encode(subscriptionStatusURLVersion, forKey: .subscriptionStatusURLVersion)
            try c.encode(subscriptionStatusURLForSandbox, forKey: .subscriptionStatusURLForSandbox)
            try c.encode(subscriptionStatusURLVersionForSandbox, forKey: .subscriptionStatusURLVersionForSandbox)
        }
    }

    /// `{"self": URL}`.
    public struct Links: Sendable, Hashable, Codable {
        public var selfLink: String?
        enum CodingKeys: String, CodingKey { case selfLink = "self" }
        public init(selfLink: String?) { self.selfLink = selfLink }
    }

    /// `apps` for an app.
    public var type: String
    public var id: String
    public var attributes: Attributes?
    public var links: Links?

    public init(type: String = Self.type, id: String, attributes: Attributes?, links: Links? = nil) {
        (self.type, self.id, self.attributes, self.links) = (type, id, attributes, links)
    }

    /// The JSON:API attribute that holds the notification version of `environment`
    /// (`subscriptionStatusUrlVersion`, `subscriptionStatusUrlVersionForSandbox`); nil for another environment.
    public static func versionAttribute(_ environment: String) -> String? {
        switch environment {
        case "production": Attributes.CodingKeys.subscriptionStatusURLVersion.rawValue
        case "sandbox": Attributes.CodingKeys.subscriptionStatusURLVersionForSandbox.rawValue
        default: nil
        }
    }

    /// The JSON:API attribute that holds the notification URL of `environment` (`subscriptionStatusUrl`,
    /// `subscriptionStatusUrlForSandbox`); nil for another environment.
    public static func urlAttribute(_ environment: String) -> String? {
        switch environment {
        case "production": Attributes.CodingKeys.subscriptionStatusURL.rawValue
        case "sandbox": Attributes.CodingKeys.subscriptionStatusURLForSandbox.rawValue
        default: nil
        }
    }

    /// The attributes every read asks for (`fields[apps]`), in Apple's spelling.
    public static let fields = [
        "bundleId", "subscriptionStatusUrl", "subscriptionStatusUrlVersion", "subscriptionStatusUrlForSandbox",
        "subscriptionStatusUrlVersionForSandbox",
    ]
}
