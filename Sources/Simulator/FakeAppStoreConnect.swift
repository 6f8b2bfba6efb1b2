public import AppStoreConnect
public import Canonical
internal import Crypto
internal import FoundationEssentials
internal import WireJSON

/// The App Store Connect API endpoints the switch uses, answered like Apple answers them (JSON:API), from the
/// simulated App Store's state (``SimWorld/appStoreConnect``, shared by every `simulate` process):
///
/// - `GET /v1/apps?filter[bundleId]=B` (a comma-separated list allowed; `fields[apps]` checked), `GET /v1/apps/{id}`
///   and `PATCH /v1/apps/{id}` (`subscriptionStatusUrl[ForSandbox]`, `subscriptionStatusUrlVersion[ForSandbox]`),
///   behind an ES256 bearer token checked like Apple does (``AppStoreConnectToken/verify(_:publicKey:now:)`` with
///   the PKI's App Store Connect key, `kid` ``SimulatorPKI/ascKeyID``, `iss` ``SimulatorPKI/issuerID``): `401
///   NOT_AUTHORIZED` otherwise — the In-App Purchase key included. Every answer carries `X-Rate-Limit`.
/// - The apps it knows: every bundle the simulated App Store has subscriptions or notifications for, every bundle
///   registered (``registerApp(bundleID:)``) or set. Each has a stable 10-digit id (``SimConnectApp/id(bundleID:)``)
///   and per environment a URL (default: the URL the fake sends notifications to, ``notifyURL``, else `null`) and a
///   version (default `V1`).
/// - Queued failures (``failNext(status:retryAfterSeconds:count:)``) answer the next authenticated calls instead:
///   401 `NOT_AUTHORIZED`, 403 `FORBIDDEN_ERROR`, 404 `NOT_FOUND`, 409 `ENTITY_ERROR.ATTRIBUTE.INVALID`, 429
///   `RATE_LIMIT_EXCEEDED` (with `Retry-After` when given), 5xx `UNEXPECTED_ERROR`.
/// - A late PATCH (``setLag(_:)``): after a version change the old version goes on being *sent* for the next N
///   notifications of that app and environment (or alternately), while the API already reports the new one.
///   ``effectiveVersion(bundleID:environment:)`` says what goes out next; ``sendNotification(bundleID:environment:)``
///   counts one notification sent.
///
/// The control endpoints, for tests and scripts driving a `simulate serve-apple` process (no token; JSON answers):
///
/// | request | does |
/// |---|---|
/// | `GET /fake/asc/state?bundle_id=B&environment=E` | `{"app_id","bundle_id","environment","version","effective_version","url","pending_notifications"}` |
/// | `POST /fake/asc/notification?bundle_id=B&environment=E` | counts one notification sent; the state, `sent_version` the version it went out in |
/// | `POST /fake/asc/version?bundle_id=B&environment=E&version=V2[&immediately=true]` | sets the version as a PATCH does (under the lag unless `immediately`) |
/// | `POST /fake/asc/url?bundle_id=B&environment=E&url=U` | sets the URL (`url` absent: back to the default) |
/// | `POST /fake/asc/apps?bundle_id=B` | makes the app known |
/// | `POST /fake/asc/failures?status=429[&retry_after=3][&count=1][&applied=true][&method=PATCH]` | queues failures (`applied`: the call is made, its answer lost; `method`: for calls of that method only); `DELETE /fake/asc/failures` clears them |
/// | `POST /fake/asc/delay?ms=N` | every API answer takes N ms from now on (0: at once) |
/// | `POST /fake/asc/lag?notifications=N[&mode=late\|mixed]` | the lag of later changes; `notifications=0` honours them at once |
public struct FakeAppStoreConnect: Sendable {
    public let store: SimStateStore
    /// The URL the fake sends notifications to, the default URL of every app and environment.
    public let notifyURL: String?
    let key: PublicKey
    let now: @Sendable () -> Int64

    /// What the fake sends in `X-Rate-Limit` (Apple: about 3,600 requests an hour per key).
    static let hourlyLimit = 3600

    public init(pki: SimulatorPKI, notifyURL: String?, now: @escaping @Sendable () -> Int64) {
        store = SimStateStore(folder: pki.folder)
        key = pki.ascKey.publicKey
        self.notifyURL = notifyURL
        self.now = now
    }

    // MARK: Swift API

    /// One environment of one app as the fake holds it.
    public struct State: Sendable, Hashable {
        public var appID: String
        public var bundleID: String
        public var environment: AppStoreEnvironment
        /// What App Store Connect reports.
        public var version: NotificationVersion
        /// What the next notification is sent in (the old version while a late PATCH is being honoured).
        public var effectiveVersion: NotificationVersion
        /// Where notifications are sent; nil: nowhere.
        public var url: String?
        /// Notifications still to go out under the late PATCH (0: none pending).
        public var pendingNotifications: Int
    }

    public func state(bundleID: String, environment: AppStoreEnvironment) throws -> State {
        let world = try store.read()
        return try state(world, bundleID: bundleID, environment: environment)
    }

    /// The version the next notification of the app and environment is sent in.
    public func effectiveVersion(bundleID: String, environment: AppStoreEnvironment) throws -> NotificationVersion {
        try state(bundleID: bundleID, environment: environment).effectiveVersion
    }

    /// Sets the version as a PATCH does: under the lag (``setLag(_:)``) unless `immediately`.
    public func setVersion(
        _ version: NotificationVersion,
        bundleID: String,
        environment: AppStoreEnvironment,
        immediately: Bool = false
    )
        throws
    {
        let env = try Self.checked(environment)
        try store.update { world in
            var app = world.appStoreConnect.apps[bundleID] ?? SimConnectApp(bundleID: bundleID)
            app[env]?.set(version, lag: immediately ? nil : world.appStoreConnect.lag)
            world.appStoreConnect.apps[bundleID] = app
        }
    }

    /// Sets where Apple sends the app's notifications of `environment`; nil: back to ``notifyURL``.
    public func setURL(_ url: String?, bundleID: String, environment: AppStoreEnvironment) throws {
        let env = try Self.checked(environment)
        try store.update { world in
            var app = world.appStoreConnect.apps[bundleID] ?? SimConnectApp(bundleID: bundleID)
            app[env]?.url = url
            world.appStoreConnect.apps[bundleID] = app
        }
    }

    /// Makes an app known to App Store Connect before anything else names it.
    public func registerApp(bundleID: String) throws {
        try store.update { $0.appStoreConnect.registered.insert(bundleID) }
    }

    /// The next `count` authenticated App Store Connect API calls answer `status` (with `Retry-After` for a 429
    /// when `retryAfterSeconds` is given) instead of their real answer.
    /// With `applied` each call is carried out first and only its answer is lost (a 5xx after Apple made the change);
    /// with `method` only calls of that method fail (`PATCH`).
    public func failNext(
        status: Int,
        retryAfterSeconds: Int? = nil,
        count: Int = 1,
        applied: Bool = false,
        method: String? = nil
    ) throws {
        let failure = SimConnectFailure(
            status: status,
            retryAfterSeconds: retryAfterSeconds,
            applied: applied,
            method: method
        )
        try store.update { world in
            world.appStoreConnect.failures += Array(repeating: failure, count: max(0, count))
        }
    }

    /// Every API answer from now on takes `millis` (0: at once).
    public func setDelay(millis: Int) throws {
        try store.update { $0.appStoreConnect.delayMillis = max(0, millis) }
    }

    public func clearFailures() throws {
        try store.update { $0.appStoreConnect.failures = [] }
    }

    /// How later version changes are honoured: nil (or 0 notifications) at once.
    public func setLag(_ lag: SimConnectLag?) throws {
        try store.update { $0.appStoreConnect.lag = lag.flatMap { $0.notifications > 0 ? $0 : nil } }
    }

    /// Counts one notification of the app and environment as sent: the version it goes out in and the URL it goes
    /// to (nil: nowhere). A late PATCH advances by one.
    @discardableResult
    public func sendNotification(
        bundleID: String,
        environment: AppStoreEnvironment
    ) throws -> (version: NotificationVersion, url: String?) {
        let env = try Self.checked(environment)
        return try store.update { world in send(&world, bundleID: bundleID, environment: env) }
    }

    func send(
        _ world: inout SimWorld,
        bundleID: String,
        environment: AppStoreEnvironment
    ) -> (version: NotificationVersion, url: String?) {
        var app = world.appStoreConnect.apps[bundleID] ?? SimConnectApp(bundleID: bundleID)
        var setting = app[environment] ?? SimConnectSetting()
        let version = setting.send()
        app[environment] = setting
        world.appStoreConnect.apps[bundleID] = app
        return (version, setting.url ?? notifyURL)
    }

    func state(_ world: SimWorld, bundleID: String, environment: AppStoreEnvironment) throws -> State {
        let env = try Self.checked(environment)
        let app = world.appStoreConnect.apps[bundleID] ?? SimConnectApp(bundleID: bundleID)
        let setting = app[env] ?? SimConnectSetting()
        return State(
            appID: app.id,
            bundleID: bundleID,
            environment: env,
            version: setting.version,
            effectiveVersion: setting.effectiveVersion,
            url: setting.url ?? notifyURL,
            pendingNotifications: setting.pending?.remaining ?? 0
        )
    }

    static func checked(_ environment: AppStoreEnvironment) throws -> AppStoreEnvironment {
        guard environment == .production || environment == .sandbox else {
            throw SimulatorError(
                "bad_environment",
                "App Store Connect has notification settings for production and sandbox only"
            )
        }
        return environment
    }

    /// Every bundle App Store Connect knows: set, registered, or with subscriptions or notifications.
    static func knownBundles(_ world: SimWorld) -> Set<String> {
        var bundles = Set(world.appStoreConnect.apps.keys).union(world.appStoreConnect.registered)
        bundles.formUnion(world.subscriptions.values.map(\.bundleID))
        bundles.formUnion(world.notifications.map(\.bundleID))
        bundles.formUnion(world.testNotifications.values.map(\.bundleID))
        bundles.remove("")
        return bundles
    }

    /// The app as the API describes it.
    func app(_ world: SimWorld, bundleID: String) -> AppStoreConnectApp {
        let app = world.appStoreConnect.apps[bundleID] ?? SimConnectApp(bundleID: bundleID)
        return AppStoreConnectApp(
            id: app.id,
            bundleID: bundleID,
            productionURL: app.production.url ?? notifyURL,
            productionVersion: app.production.version,
            sandboxURL: app.sandbox.url ?? notifyURL,
            sandboxVersion: app.sandbox.version
        )
    }

    // MARK: The API

    /// `/v1/apps…` (the API) and `/fake/asc/…` (the control endpoints).
    public func handle(_ r: FakeAppleRequest) -> FakeAppleResponse {
        if r.path.hasPrefix("/fake/asc/") {
            do { return try control(r) } catch {
                return Self.error(ConnectRefusal(500, "UNEXPECTED_ERROR", "An unexpected error occurred.", "\(error)"))
            }
        }
        var response: FakeAppleResponse
        do {
            response = try api(r)
        } catch let refusal as ConnectRefusal {
            response = Self.error(refusal)
        } catch {
            response = Self.error(ConnectRefusal(500, "UNEXPECTED_ERROR", "An unexpected error occurred.", "\(error)"))
        }
        response.delayMillis = (try? store.read().appStoreConnect.delayMillis) ?? 0
        return response
    }

    func api(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        guard let header = r.authorization, header.hasPrefix("Bearer ") else { throw ConnectRefusal.notAuthorized }
        let time = now()
        let token: AppStoreConnectToken
        do {
            token = try AppStoreConnectToken.verify(String(header.dropFirst(7)), publicKey: key, now: time / 1000)
        } catch {
            throw ConnectRefusal.notAuthorized
        }
        // Apple matches the key id and issuer to the team's key as well.
        guard token.keyID == SimulatorPKI.ascKeyID, token.issuerID == SimulatorPKI.issuerID else {
            throw ConnectRefusal.notAuthorized
        }
        let world = try store.read()
        if world.appStoreConnect.failures.contains(where: { $0.answers(r.method) }) {
            let failure = try store.update { w -> SimConnectFailure? in
                guard let i = w.appStoreConnect.failures.firstIndex(where: { $0.answers(r.method) }) else { return nil }
                return w.appStoreConnect.failures.remove(at: i)
            }
            if let failure {
                // Carried out, its answer lost: the call is made and the failure answers instead.
                if failure.applied { _ = try? answer(r, store.read()) }
                throw ConnectRefusal.queued(failure)
            }
            return try answer(r, store.read())
        }
        return try answer(r, world)
    }

    /// The API's answer to an authenticated call.
    func answer(_ r: FakeAppleRequest, _ world: SimWorld) throws -> FakeAppleResponse {
        // ["", "v1", "apps", id]
        let parts = r.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[1] == "v1", parts[2] == "apps" else { throw ConnectRefusal.pathNotFound(r.path) }
        switch (r.method, parts.count) {
        case ("GET", 3):
            return try list(r, world)
        case ("GET", 4):
            let bundle = try bundleID(id: parts[3], world)
            try Self.checkFields(r)
            return try Self.json(
                200,
                AppResponse(data: resource(app(world, bundleID: bundle)), links: .init(selfLink: selfLink(parts[3])))
            )
        case ("PATCH", 4):
            return try update(id: parts[3], body: r.body)
        case (_, 3), (_, 4):
            throw ConnectRefusal(
                405,
                "METHOD_NOT_ALLOWED",
                "The request method is not valid for the resource path.",
                "The resource 'apps' does not allow '\(r.method)'."
            )
        default:
            throw ConnectRefusal.pathNotFound(r.path)
        }
    }

    /// `GET /v1/apps`: the known apps whose bundle id is one of `filter[bundleId]`'s (every known app without it).
    func list(_ r: FakeAppleRequest, _ world: SimWorld) throws -> FakeAppleResponse {
        try Self.checkFields(r)
        var bundles = Self.knownBundles(world).sorted()
        if let filter = r.value("filter[bundleId]") {
            let wanted = Set(filter.split(separator: ",").map(String.init))
            guard !wanted.isEmpty else {
                throw ConnectRefusal(
                    400,
                    "PARAMETER_ERROR.INVALID",
                    "A parameter has an invalid value",
                    "'' is not a valid value for the filter 'bundleId'",
                    parameter: "filter[bundleId]"
                )
            }
            bundles = bundles.filter(wanted.contains)
        }
        let data = bundles.map { resource(app(world, bundleID: $0)) }
        return try Self.json(
            200,
            AppsResponse(
                data: data,
                links: .init(selfLink: Self.base + "/v1/apps"),
                meta: .init(paging: .init(total: data.count, limit: 50))
            )
        )
    }

    /// `PATCH /v1/apps/{id}`: the notification settings of the JSON:API update document, as Apple checks them.
    func update(id: String, body: [UInt8]) throws -> FakeAppleResponse {
        guard case .object(let document)? = try? JSONParser.parse(body), case .object(let data)? = document["data"]
        else {
            throw ConnectRefusal(
                422,
                "ENTITY_UNPROCESSABLE",
                "The request entity is not processable.",
                "The request body is not a JSON:API document with a 'data' object."
            )
        }
        guard data["type"]?.stringValue == AppResource.type else {
            throw ConnectRefusal(
                409,
                "ENTITY_ERROR.TYPE.INVALID",
                "The provided entity is invalid",
                "The resource type must be 'apps'.",
                pointer: "/data/type"
            )
        }
        guard data["id"]?.stringValue == id else {
            throw ConnectRefusal(
                409,
                "ENTITY_ERROR.ID.INVALID",
                "The provided entity is invalid",
                "The resource id must be the one of the path, '\(id)'.",
                pointer: "/data/id"
            )
        }
        var versions: [(AppStoreEnvironment, NotificationVersion)] = []
        var urls: [(AppStoreEnvironment, String?)] = []
        for (name, value) in data["attributes"]?.objectValue ?? JSONObject() {
            let pointer = "/data/attributes/" + name
            switch name {
            case "subscriptionStatusUrlVersion", "subscriptionStatusUrlVersionForSandbox":
                guard let text = value.stringValue, text == "V1" || text == "V2" else {
                    throw ConnectRefusal(
                        409,
                        "ENTITY_ERROR.ATTRIBUTE.INVALID",
                        "An attribute value is invalid.",
                        "'\(name)' must be 'V1' or 'V2'.",
                        pointer: pointer
                    )
                }
                versions.append(
                    (name.hasSuffix("ForSandbox") ? .sandbox : .production, NotificationVersion(rawValue: text))
                )
            case "subscriptionStatusUrl", "subscriptionStatusUrlForSandbox":
                let url = value.stringValue
                guard value.isNull || (url.map { $0.hasPrefix("https://") || $0.hasPrefix("http://") } ?? false) else {
                    throw ConnectRefusal(
                        409,
                        "ENTITY_ERROR.ATTRIBUTE.INVALID",
                        "An attribute value is invalid.",
                        "'\(name)' must be a URL.",
                        pointer: pointer
                    )
                }
                urls.append((name.hasSuffix("ForSandbox") ? .sandbox : .production, url))
            default:
                throw ConnectRefusal(
                    409,
                    "ENTITY_ERROR.ATTRIBUTE.INVALID",
                    "An attribute value is invalid.",
                    "The simulated App Store Connect does not change '\(name)'.",
                    pointer: pointer
                )
            }
        }
        let updated = try store.update { world -> AppStoreConnectApp in
            let bundle = try bundleID(id: id, world)
            var app = world.appStoreConnect.apps[bundle] ?? SimConnectApp(bundleID: bundle)
            for (env, url) in urls { app[env]?.url = url }
            for (env, version) in versions { app[env]?.set(version, lag: world.appStoreConnect.lag) }
            world.appStoreConnect.apps[bundle] = app
            return self.app(world, bundleID: bundle)
        }
        return try Self.json(200, AppResponse(data: resource(updated), links: .init(selfLink: selfLink(id))))
    }

    func bundleID(id: String, _ world: SimWorld) throws(ConnectRefusal) -> String {
        guard let bundle = Self.knownBundles(world).first(where: { SimConnectApp.id(bundleID: $0) == id }) else {
            throw ConnectRefusal(
                404,
                "NOT_FOUND",
                "The specified resource does not exist",
                "There is no resource of type 'apps' with id '\(id)'"
            )
        }
        return bundle
    }

    /// `fields[apps]` names attributes of an app (Apple answers 400 to one it does not know).
    static func checkFields(_ r: FakeAppleRequest) throws(ConnectRefusal) {
        guard let fields = r.value("fields[apps]") else { return }
        let known = Set(
            AppResource.fields + ["name", "sku", "primaryLocale", "contentRightsDeclaration", "isOrEverWasMadeForKids"]
        )
        for field in fields.split(separator: ",", omittingEmptySubsequences: false) where !known.contains(String(field))
        {
            throw ConnectRefusal(
                400,
                "PARAMETER_ERROR.INVALID",
                "A parameter has an invalid value",
                "'\(field)' is not a valid field name",
                parameter: "fields[apps]"
            )
        }
    }

    static let base = "https://api.appstoreconnect.apple.com"
    func selfLink(_ id: String) -> String { Self.base + "/v1/apps/" + id }

    func resource(_ app: AppStoreConnectApp) -> AppResource {
        var r = app.resource
        r.links = .init(selfLink: selfLink(app.id))
        return r
    }

    // MARK: Encoding

    static func json<T: Encodable>(
        _ status: Int,
        _ value: T,
        remaining: Int = hourlyLimit - 1
    ) throws -> FakeAppleResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return FakeAppleResponse(
            status: status,
            headers: [(name: "X-Rate-Limit", value: "user-hour-lim:\(hourlyLimit);user-hour-rem:\(remaining);")],
            body: Array(try encoder.encode(value))
        )
    }

    static func error(_ refusal: ConnectRefusal) -> FakeAppleResponse {
        let item = ErrorResponse.Item(
            id: LifecycleContext.uuid("asc-error|\(refusal.status)|\(refusal.code)|\(refusal.detail)"),
            status: String(refusal.status),
            code: refusal.code,
            title: refusal.title,
            detail: refusal.detail,
            source: refusal.pointer.map { .init(pointer: $0) } ?? refusal.parameter.map { .init(parameter: $0) }
        )
        var response =
            (try? json(
                refusal.status,
                ErrorResponse(errors: [item]),
                remaining: refusal.status == 429 ? 0 : hourlyLimit - 1
            ))
            ?? FakeAppleResponse(status: refusal.status, body: [])
        if let seconds = refusal.retryAfterSeconds {
            response.headers.append((name: "Retry-After", value: String(seconds)))
        }
        return response
    }
}

/// An App Store Connect API call refused, as Apple answers it: HTTP status and one JSON:API error.
struct ConnectRefusal: Error {
    var status: Int
    var code: String
    var title: String
    var detail: String
    var pointer: String?
    var parameter: String?
    var retryAfterSeconds: Int?

    init(
        _ status: Int,
        _ code: String,
        _ title: String,
        _ detail: String,
        pointer: String? = nil,
        parameter: String? = nil
    ) {
        (self.status, self.code, self.title, self.detail, self.pointer, self.parameter) = (
            status, code, title, detail, pointer, parameter
        )
    }

    static let notAuthorized = ConnectRefusal(
        401,
        "NOT_AUTHORIZED",
        "Authentication credentials are missing or invalid.",
        "Provide a properly configured and signed bearer token, and make sure that it has not expired."
    )

    static func pathNotFound(_ path: String) -> ConnectRefusal {
        ConnectRefusal(
            404,
            "NOT_FOUND",
            "The specified resource does not exist",
            "The path provided does not match a defined resource type."
        )
    }

    /// The answer a queued failure stands for.
    static func queued(_ f: SimConnectFailure) -> ConnectRefusal {
        var r: ConnectRefusal
        switch f.status {
        case 401: r = notAuthorized
        case 403:
            r = ConnectRefusal(
                403,
                "FORBIDDEN_ERROR",
                "This request is forbidden for security reasons",
                "The API key in use does not allow this request"
            )
        case 404:
            r = ConnectRefusal(
                404,
                "NOT_FOUND",
                "The specified resource does not exist",
                "The requested resource was not found."
            )
        case 409:
            r = ConnectRefusal(
                409,
                "ENTITY_ERROR.ATTRIBUTE.INVALID",
                "An attribute value is invalid.",
                "The app's notification settings cannot be changed now.",
                pointer: "/data/attributes"
            )
        case 429:
            r = ConnectRefusal(
                429,
                "RATE_LIMIT_EXCEEDED",
                "The request rate limit has been reached.",
                "We've received too many requests for this API. Please wait and try again or slow down your request rate."
            )
            r.retryAfterSeconds = f.retryAfterSeconds
        default:
            r = ConnectRefusal(
                f.status,
                "UNEXPECTED_ERROR",
                "An unexpected error occurred.",
                "An unexpected error occurred on the server side."
            )
        }
        return r
    }
}
