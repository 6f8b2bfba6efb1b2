public import Canonical
internal import Crypto
public import HTTPClient
internal import WireJSON

/// The App Store Connect API calls the switch needs (docs/architecture.md, "The switch"): find an app by bundle id,
/// read it, and set the version of App Store Server Notifications Apple sends it per environment — the attribute
/// Apple's TN3180 changes to move between V1 and V2.
///
/// - Each request carries a fresh ES256 bearer token (``AppStoreConnectToken``) made from ``credentials`` with
///   the injected clock: `iat` now, `exp` 15 minutes later.
/// - **One attempt per call.** Nothing is retried here, a 429 included: the caller decides when to try again
///   (``AppStoreConnectError/retryAfterMillis`` says what Apple asked for), so a migration never hammers Apple.
/// - Answers are bounded (``maxResponseBytes``), parsed strictly (`WireJSON`: duplicate keys refused) and checked:
///   the resource must be the `apps` resource asked for; anything else is `malformed`.
/// - Every failure is one ``AppStoreConnectError`` with a stable code; its reason never holds the token or the key.
public struct AppStoreConnectClient: Sendable {
    /// Apple's base URL.
    public static let defaultBaseURL = "https://api.appstoreconnect.apple.com"

    /// Requests go to base + `/v1/…`. A trailing `/` is ignored.
    public let baseURL: String
    public let credentials: AppStoreConnectCredentials
    let transport: any HTTPTransport
    let now: @Sendable () -> Int64
    /// The whole-request deadline of each call.
    public var timeoutMillis = 30_000
    /// The largest answer read (an app resource is well under 2 KB); a larger one is `malformed`.
    public var maxResponseBytes = 1 << 20

    /// - Parameters:
    ///   - baseURL: ``defaultBaseURL`` in production; the simulator's fake in tests.
    ///   - now: the clock (ms since the epoch) the tokens are dated with.
    public init(
        baseURL: String = Self.defaultBaseURL,
        credentials: AppStoreConnectCredentials,
        transport: any HTTPTransport,
        now: @escaping @Sendable () -> Int64
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        (self.baseURL, self.credentials, self.transport, self.now) = (base, credentials, transport, now)
    }

    /// The app whose bundle id is `bundleID` (`GET /v1/apps?filter[bundleId]=…&fields[apps]=…`). Apple's filter
    /// may answer other apps as well; exactly one must have this very bundle id, otherwise `not_found`.
    public func findApp(bundleID: String) async throws(AppStoreConnectError) -> AppStoreConnectApp {
        guard !bundleID.isEmpty else { throw AppStoreConnectError(.badRequest, "no bundle id to look for") }
        let body = try await send(.get, "/v1/apps", query: [("filter[bundleId]", bundleID), Self.fieldsQuery])
        let answer = try Self.decode(AppsResponse.self, body, what: "the app list")
        let apps = try answer.data.map { r throws(AppStoreConnectError) in try AppStoreConnectApp(resource: r) }
        let matching = apps.filter { $0.bundleID == bundleID }
        guard let app = matching.first else {
            throw AppStoreConnectError(
                .notFound,
                "App Store Connect has no app with bundle id \(Clip.printable(bundleID, 200)) that this key can see"
            )
        }
        guard matching.count == 1 else {
            throw AppStoreConnectError(
                .notFound,
                "App Store Connect answered \(matching.count) apps with bundle id \(Clip.printable(bundleID, 200))"
            )
        }
        return app
    }

    /// The app App Store Connect knows as `id` (`GET /v1/apps/{id}` with the same fields).
    public func app(id: String) async throws(AppStoreConnectError) -> AppStoreConnectApp {
        let body = try await send(.get, "/v1/apps/" + (try Self.segment(id)), query: [Self.fieldsQuery])
        return try Self.app(body, id: id, what: "the app")
    }

    /// Sets the version Apple sends `environment`'s notifications of app `appID` in (`PATCH /v1/apps/{id}` with
    /// `subscriptionStatusUrlVersion`, or `subscriptionStatusUrlVersionForSandbox` for sandbox). Returns the app as
    /// Apple answered it. Apple may take a while to honour it: for a time either version may still arrive.
    public func setNotificationVersion(
        _ version: NotificationVersion,
        environment: AppStoreEnvironment,
        appID: String
    ) async throws(AppStoreConnectError) -> AppStoreConnectApp {
        guard let attribute = AppResource.versionAttribute(environment.rawValue) else {
            throw AppStoreConnectError(
                .badRequest,
                "App Store Connect has no notification version for the \(environment) environment"
            )
        }
        let path = "/v1/apps/" + (try Self.segment(appID))
        let body = try await send(
            .patch,
            path,
            body: Self.updateBody(appID: appID, attributes: [(attribute, version.rawValue)])
        )
        return try Self.app(body, id: appID, what: "the updated app")
    }

    // MARK: Wire

    /// `fields[apps]=bundleId,subscriptionStatusUrl,…`: the attributes every read asks for.
    static let fieldsQuery = ("fields[apps]", AppResource.fields.joined(separator: ","))

    /// The JSON:API update document: `{"data":{"attributes":{…},"id":…,"type":"apps"}}`.
    static func updateBody(appID: String, attributes: [(String, String)]) -> [UInt8] {
        var a = JSONObjectWriter()
        for (name, value) in attributes { a.string(name, value) }
        var data = JSONObjectWriter()
        data.string("type", AppResource.type)
        data.string("id", appID)
        data.raw("attributes", a.finish())
        var document = JSONObjectWriter()
        document.raw("data", data.finish())
        return document.finish()
    }

    /// One request, one attempt: the body of a 2xx answer, else the failure it means.
    func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        query: [(String, String)] = [],
        body: [UInt8]? = nil
    )
        async throws(AppStoreConnectError) -> [UInt8]
    {
        let token: String
        do {
            token = try AppStoreConnectToken(credentials: credentials, nowMillis: now()).signed(
                with: credentials.privateKey
            )
        } catch {
            throw AppStoreConnectError(
                .invalidKey,
                "the App Store Connect API key cannot make an ES256 token (\(error.code)): it must be a P-256 .p8 key"
            )
        }
        var headers = [HTTPHeader("Authorization", "Bearer " + token), HTTPHeader("Accept", "application/json")]
        if body != nil { headers.append(HTTPHeader("Content-Type", "application/json")) }
        let members = query.map {
            URLEncoding.percentEncoded($0.0) + "=" + URLEncoding.percentEncoded($0.1, keeping: [UInt8(ascii: ",")])
        }
        let url = baseURL + path + (members.isEmpty ? "" : "?" + members.joined(separator: "&"))
        let request = HTTPRequest(
            method: method,
            url: url,
            headers: headers,
            body: body ?? [],
            timeoutMillis: timeoutMillis,
            maxResponseBytes: maxResponseBytes
        )
        let response: HTTPResponse
        do { response = try await transport.send(request) } catch { throw Self.judge(error) }
        guard (200..<300).contains(response.status) else { throw Self.judge(response, token: token, now: now()) }
        return response.body
    }

    static func app(_ body: [UInt8], id: String, what: String) throws(AppStoreConnectError) -> AppStoreConnectApp {
        let app = try AppStoreConnectApp(resource: try decode(AppResponse.self, body, what: what).data)
        guard app.id == id else {
            throw AppStoreConnectError(
                .malformed,
                "App Store Connect answered app \(Clip.printable(app.id, 40)) for \(Clip.printable(id, 40))"
            )
        }
        return app
    }

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], what: String) throws(AppStoreConnectError) -> T {
        do { return try JSONValueDecoder().decode(type, from: body) } catch {
            throw AppStoreConnectError(
                .malformed,
                "App Store Connect answered \(what) with something that is not its JSON:API (\(DecodingFailure.describe(error, clippedTo: 120)))"
            )
        }
    }

    /// One path segment, percent-encoded (``URLEncoding/pathSegment(_:)``), so an id can never change the path
    /// (`..`, `/`, `?`).
    static func segment(_ value: String) throws(AppStoreConnectError) -> String {
        guard !value.isEmpty else { throw AppStoreConnectError(.badRequest, "no app id to ask for") }
        return URLEncoding.pathSegment(value)
    }
}
