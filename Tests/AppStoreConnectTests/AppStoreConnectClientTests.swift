import AppStoreConnect
import Canonical
import Crypto
import Foundation
import HTTPClient
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import WireJSON

/// The simulator's fake Apple behind the HTTP seam, in memory, and an App Store Connect client of it with the
/// simulator's team key and a fixed clock.
struct ConnectFixture {
    static let notifyURL = "https://gateway.example/notifications"

    let pki: SimulatorPKI
    let apple: FakeApple
    let transport: ScriptedTransport
    let client: AppStoreConnectClient
    let now: Int64

    var fake: FakeAppStoreConnect { apple.appStoreConnect }
    var appID: String { SimConnectApp.id(bundleID: Sim.bundleID) }

    /// `key`/`keyID`: the credentials the client presents (the simulator's App Store Connect key by default).
    init(pki: SimulatorPKI, now: Int64 = Sim.t0, key: PrivateKey? = nil, keyID: String = SimulatorPKI.ascKeyID) throws {
        self.pki = pki
        self.now = now
        let apple = FakeApple(pki: pki, now: { now }, notifyURL: Self.notifyURL)
        self.apple = apple
        transport = ScriptedTransport { request throws(HTTPClientError) in
            Self.response(apple.handle(Self.fakeRequest(request)))
        }
        client = AppStoreConnectClient(
            baseURL: "https://api.fake-connect.example/",
            credentials: AppStoreConnectCredentials(
                issuerID: SimulatorPKI.issuerID,
                keyID: keyID,
                privateKey: key ?? pki.ascKey
            ),
            transport: transport,
            now: { now }
        )
        try fake.registerApp(bundleID: Sim.bundleID)
    }

    /// The fake's request for one the client sent: path and query decoded the way an HTTP server decodes them.
    static func fakeRequest(_ request: HTTPRequest) -> FakeAppleRequest {
        var rest = Substring(request.url)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var items: [FakeAppleRequest.QueryItem] = []
        for member in parts.count == 2 ? parts[1].split(separator: "&") : [] {
            let pair = member.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            items.append(
                FakeAppleRequest.QueryItem(
                    String(pair[0]).removingPercentEncoding ?? "",
                    pair.count == 2 ? String(pair[1]).removingPercentEncoding ?? "" : ""
                )
            )
        }
        let authorization = request.headers.first { $0.name.lowercased() == "authorization" }?.value
        return FakeAppleRequest(
            method: request.method.rawValue,
            path: String(parts[0]),
            queryItems: items,
            authorization: authorization,
            body: request.body
        )
    }

    static func response(_ r: FakeAppleResponse) -> HTTPResponse {
        HTTPResponse(
            status: r.status,
            headers: [HTTPHeader("Content-Type", "application/json")] + r.headers.map { HTTPHeader($0.name, $0.value) },
            body: r.body
        )
    }

    /// The error `body` fails with; an issue is recorded when it succeeds.
    static func error<T>(_ body: () async throws(AppStoreConnectError) -> T) async -> AppStoreConnectError? {
        do {
            _ = try await body()
            Issue.record("expected an AppStoreConnectError")
            return nil
        } catch {
            return error
        }
    }

    /// A client answered by `responder` alone (crafted answers).
    static func scripted(
        _ pki: SimulatorPKI,
        _ responder: @escaping ScriptedTransport.Responder
    ) -> (AppStoreConnectClient, ScriptedTransport) {
        let transport = ScriptedTransport(responder)
        let client = AppStoreConnectClient(
            credentials: AppStoreConnectCredentials(
                issuerID: SimulatorPKI.issuerID,
                keyID: SimulatorPKI.ascKeyID,
                privateKey: pki.ascKey
            ),
            transport: transport,
            now: { Sim.t0 }
        )
        return (client, transport)
    }

    /// The bearer token of a recorded request.
    static func bearer(_ request: HTTPRequest) throws -> String {
        let value = try #require(request.headers.first { $0.name == "Authorization" }?.value)
        try #require(value.hasPrefix("Bearer "))
        return String(value.dropFirst(7))
    }
}

/// The App Store Connect API client against the simulator's fake App Store Connect, in memory: finding, reading and
/// changing an app, and every failure as one clear code with nothing secret in it.
@Suite struct AppStoreConnectClientTests {
    @Test func findsTheAppByBundleIDWithItsSettingsForBothEnvironments() async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            let app = try await f.client.findApp(bundleID: Sim.bundleID)
            #expect(
                app
                    == AppStoreConnectApp(
                        id: f.appID,
                        bundleID: Sim.bundleID,
                        productionURL: ConnectFixture.notifyURL,
                        productionVersion: .v1,
                        sandboxURL: ConnectFixture.notifyURL,
                        sandboxVersion: .v1
                    )
            )
            #expect(app.url(.production) == ConnectFixture.notifyURL && app.version(.sandbox) == .v1)
            #expect(app.url(.xcode) == nil && app.version(.localTesting) == nil)
            #expect(f.appID.count == 10 && f.appID.allSatisfy(\.isNumber))

            let request = try #require(f.transport.requests.first)
            #expect(f.transport.requests.count == 1)
            #expect(request.method == .get)
            #expect(
                request.url
                    == "https://api.fake-connect.example/v1/apps?filter%5BbundleId%5D=\(Sim.bundleID)&fields%5Bapps%5D="
                    + "bundleId,subscriptionStatusUrl,subscriptionStatusUrlVersion,subscriptionStatusUrlForSandbox,subscriptionStatusUrlVersionForSandbox"
            )
            #expect(request.headers.contains(HTTPHeader("Accept", "application/json")))
            #expect(request.maxResponseBytes == 1 << 20)
            // A fresh ES256 token of the team key: kid, iss, aud, 15 minutes from the injected clock.
            let token = try AppStoreConnectToken.verify(
                try ConnectFixture.bearer(request),
                publicKey: pki.ascKey.publicKey,
                now: f.now / 1000
            )
            #expect(
                token
                    == AppStoreConnectToken(
                        keyID: SimulatorPKI.ascKeyID,
                        issuerID: SimulatorPKI.issuerID,
                        issuedAt: f.now / 1000,
                        expiresAt: f.now / 1000 + 900
                    )
            )
        }
    }

    @Test func readsTheAppByID() async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            let app = try await f.client.app(id: f.appID)
            #expect(app.id == f.appID && app.bundleID == Sim.bundleID && app.productionVersion == .v1)
            let request = try #require(f.transport.requests.last)
            #expect(
                request.url.hasPrefix("https://api.fake-connect.example/v1/apps/\(f.appID)?fields%5Bapps%5D=bundleId,")
            )
        }
    }

    @Test(arguments: [AppStoreEnvironment.production, .sandbox])
    func setsTheVersionOfOneEnvironmentAndBack(environment: AppStoreEnvironment) async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            let other: AppStoreEnvironment = environment == .production ? .sandbox : .production
            let updated = try await f.client.setNotificationVersion(.v2, environment: environment, appID: f.appID)
            #expect(updated.version(environment) == .v2)
            #expect(updated.version(other) == .v1, "the other environment is untouched")
            #expect(updated.url(environment) == ConnectFixture.notifyURL)

            let request = try #require(f.transport.requests.last)
            #expect(request.method == .patch)
            #expect(request.url == "https://api.fake-connect.example/v1/apps/\(f.appID)")
            #expect(request.headers.contains(HTTPHeader("Content-Type", "application/json")))
            let attribute =
                environment == .production ? "subscriptionStatusUrlVersion" : "subscriptionStatusUrlVersionForSandbox"
            #expect(
                String(decoding: request.body, as: UTF8.self)
                    == #"{"data":{"attributes":{"\#(attribute)":"V2"},"id":"\#(f.appID)","type":"apps"}}"#
            )

            // Apple holds it: a later read and the fake's own state say V2.
            #expect(try await f.client.app(id: f.appID).version(environment) == .v2)
            #expect(try f.fake.state(bundleID: Sim.bundleID, environment: environment).version == .v2)
            #expect(try f.fake.effectiveVersion(bundleID: Sim.bundleID, environment: environment) == .v2)
            #expect(try f.fake.state(bundleID: Sim.bundleID, environment: other).version == .v1)

            let back = try await f.client.setNotificationVersion(.v1, environment: environment, appID: f.appID)
            #expect(back.version(environment) == .v1)
        }
    }

    @Test func anEnvironmentWithoutSettingsIsRefusedBeforeAnythingIsSent() async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.setNotificationVersion(.v2, environment: .xcode, appID: f.appID)
            }
            #expect(error?.code == .badRequest)
            let empty = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.app(id: "")
            }
            #expect(empty?.code == .badRequest)
            #expect(f.transport.requests.isEmpty)
        }
    }

    @Test func anUnknownBundleOrIDIsNotFound() async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            let bundle = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.findApp(bundleID: "com.example.unknown")
            }
            #expect(bundle?.code == .notFound)
            #expect(bundle?.httpStatus == nil, "Apple answered 200 with no app")
            #expect(bundle?.reason.contains("com.example.unknown") == true)
            let id = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.app(id: "1000000001")
            }
            #expect(id?.code == .notFound)
            #expect(id?.httpStatus == 404)
            #expect(id?.appleCodes == ["NOT_FOUND"])
        }
    }

    @Test func aWrongKeyOrTheInAppPurchaseKeyIsUnauthorized() async throws {
        try await Sim.withPKI { pki in
            for f in [
                try ConnectFixture(pki: pki, key: try PrivateKey.generateP256()),
                try ConnectFixture(pki: pki, key: pki.apiKey, keyID: SimulatorPKI.apiKeyID),
                try ConnectFixture(pki: pki, keyID: "OTHERKEY01"),
            ] {
                let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                    try await f.client.findApp(bundleID: Sim.bundleID)
                }
                #expect(error?.code == .unauthorized)
                #expect(error?.httpStatus == 401)
                #expect(error?.appleCodes == ["NOT_AUTHORIZED"])
                #expect(error?.reason.contains("not the In-App Purchase key") == true)
                let token = try ConnectFixture.bearer(try #require(f.transport.requests.first))
                #expect(error.map { !$0.reason.contains(token) && !$0.description.contains(token) } == true)
                #expect(f.transport.requests.count == 1, "one attempt")
            }
        }
    }

    /// Each failure Apple may answer becomes one code, after exactly one request (the caller decides about retries).
    @Test(arguments: [
        (401, AppStoreConnectError.Code.unauthorized, "NOT_AUTHORIZED", "key id, issuer id or private key"),
        (403, .forbidden, "FORBIDDEN_ERROR", "App Manager or Admin"),
        (404, .notFound, "NOT_FOUND", "does not know it"),
        (409, .conflict, "ENTITY_ERROR.ATTRIBUTE.INVALID", "cannot be changed now"),
        (500, .unavailable, "UNEXPECTED_ERROR", "App Store Connect failed"),
        (503, .unavailable, "UNEXPECTED_ERROR", "App Store Connect failed"),
    ])
    func eachFailureIsOneClearCodeAfterOneAttempt(
        status: Int,
        code: AppStoreConnectError.Code,
        appleCode: String,
        words: String
    ) async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            try f.fake.failNext(status: status)
            let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.setNotificationVersion(.v2, environment: .sandbox, appID: f.appID)
            }
            #expect(error?.code == code)
            #expect(error?.httpStatus == status)
            #expect(error?.appleCodes == [appleCode])
            #expect(error?.reason.contains(words) == true, "\(error?.reason ?? "")")
            #expect(error?.reason.contains("Apple: \(status) \(appleCode)") == true, "Apple's own words are kept")
            #expect(f.transport.requests.count == 1)
            // The failure was the answer: nothing changed, and the next call goes through.
            #expect(try f.fake.state(bundleID: Sim.bundleID, environment: .sandbox).version == .v1)
            #expect(
                try await f.client.setNotificationVersion(.v2, environment: .sandbox, appID: f.appID).sandboxVersion
                    == .v2
            )
        }
    }

    @Test func aRateLimitSaysHowLongAppleAskedToWaitAndIsNotRetried() async throws {
        try await Sim.withPKI { pki in
            let f = try ConnectFixture(pki: pki)
            try f.fake.failNext(status: 429, retryAfterSeconds: 3)
            let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.findApp(bundleID: Sim.bundleID)
            }
            #expect(error?.code == .rateLimited)
            #expect(error?.retryAfterMillis == 3_000)
            #expect(error?.appleCodes == ["RATE_LIMIT_EXCEEDED"])
            #expect(
                error?.reason.contains("X-Rate-Limit: user-hour-lim:3600;user-hour-rem:0;") == true,
                "\(error?.reason ?? "")"
            )
            #expect(error?.reason.contains("wait 3 s") == true)
            #expect(f.transport.requests.count == 1, "no retry inside the client")

            // Without Retry-After there is nothing to report; an HTTP-date is read against the injected clock.
            try f.fake.failNext(status: 429)
            let bare = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await f.client.app(id: f.appID)
            }
            #expect(bare?.code == .rateLimited && bare?.retryAfterMillis == nil)
            let (dated, _) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                HTTPResponse(
                    status: 429,
                    headers: [HTTPHeader("Retry-After", "Sun, 01 Jun 2025 00:01:00 GMT")],
                    body: []
                )
            }
            let later = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await dated.app(id: "1")
            }
            #expect(later?.retryAfterMillis == 60_000)
        }
    }

    /// Answers that are not Apple's JSON:API are `malformed`, whatever went wrong in them.
    @Test(arguments: [
        (200, #"not json"#),
        (200, #"{"data":[],"data":[]}"#),
        (200, #"{"data":{"type":"apps","id":"1","attributes":{"bundleId":"com.example.sim"}}}"#),
        (200, #"{"data":[{"type":"bundleIds","id":"1","attributes":{"bundleId":"com.example.sim"}}]}"#),
        (200, #"{"data":[{"type":"apps","id":"1","attributes":{}}]}"#),
        (200, #"{"data":[{"type":"apps","id":"","attributes":{"bundleId":"com.example.sim"}}]}"#),
        (
            200,
            #"{"data":[{"type":"apps","id":"1","attributes":{"bundleId":"com.example.sim","subscriptionStatusUrlVersion":2}}]}"#
        ),
        (302, #""#),
    ])
    func answersThatAreNotApplesJSONAPIAreMalformed(status: Int, body: String) async throws {
        try await Sim.withPKI { pki in
            let (client, _) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                HTTPResponse(status: status, body: Array(body.utf8))
            }
            let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await client.findApp(bundleID: "com.example.sim")
            }
            #expect(error?.code == .malformed, "\(error?.reason ?? "")")
        }
    }

    @Test func anAnswerForAnotherAppOrTooLargeIsMalformedAndNoAnswerIsUnavailable() async throws {
        try await Sim.withPKI { pki in
            let other = #"{"data":{"type":"apps","id":"2","attributes":{"bundleId":"com.example.sim"}}}"#
            let (client, _) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                HTTPResponse(status: 200, body: Array(other.utf8))
            }
            let wrongApp = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await client.app(id: "1")
            }
            #expect(wrongApp?.code == .malformed)
            let patched = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await client.setNotificationVersion(.v2, environment: .production, appID: "1")
            }
            #expect(patched?.code == .malformed)
            for (failure, code) in [
                (HTTPClientError.Code.responseTooLarge, AppStoreConnectError.Code.malformed),
                (.connectionFailed, .unavailable),
                (.timeout, .unavailable), (.tlsFailure, .unavailable), (.invalidURL, .unavailable),
            ] {
                let (failing, transport) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                    throw HTTPClientError(failure, "scripted")
                }
                let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                    try await failing.app(id: "1")
                }
                #expect(error?.code == code, "\(failure)")
                #expect(transport.requests.count == 1)
            }
        }
    }

    @Test func appleMayAnswerOtherAppsExactlyOneMustBeTheBundle() async throws {
        try await Sim.withPKI { pki in
            func app(_ id: String, _ bundle: String) -> String {
                #"{"type":"apps","id":"\#(id)","attributes":{"bundleId":"\#(bundle)","subscriptionStatusUrlVersion":"V3"}}"#
            }
            let body = #"{"data":[\#(app("1", "com.example.sim.widget")),\#(app("2", "com.example.sim"))]}"#
            let (client, _) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                HTTPResponse(status: 200, body: Array(body.utf8))
            }
            let found = try await client.findApp(bundleID: "com.example.sim")
            #expect(found.id == "2")
            #expect(
                found.productionVersion == NotificationVersion(rawValue: "V3"),
                "a version Apple adds later is kept"
            )
            #expect(found.sandboxVersion == nil && found.sandboxURL == nil)

            let twice = #"{"data":[\#(app("1", "com.example.sim")),\#(app("2", "com.example.sim"))]}"#
            let (ambiguous, _) = ConnectFixture.scripted(pki) { _ throws(HTTPClientError) in
                HTTPResponse(status: 200, body: Array(twice.utf8))
            }
            let error = await ConnectFixture.error { () async throws(AppStoreConnectError) in
                try await ambiguous.findApp(bundleID: "com.example.sim")
            }
            #expect(error?.code == .notFound)
        }
    }

    @Test func applesWordsAreClippedAndNeverCarryTheToken() async throws {
        try await Sim.withPKI { pki in
            // A proxy that echoes the request's Authorization header into its error, and a detail far too long.
            let (client, transport) = ConnectFixture.scripted(pki) { request throws(HTTPClientError) in
                let echoed = request.headers.first { $0.name == "Authorization" }?.value ?? ""
                let body =
                    #"{"errors":[{"status":"409","code":"ENTITY_ERROR","title":"Refused","detail":"you sent \#(echoed) \#(String(repeating: "x", count: 2000))"}]}"#
                return HTTPResponse(status: 409, body: Array(body.utf8))
            }
            let error = try #require(
                await ConnectFixture.error { () async throws(AppStoreConnectError) in
                    try await client.setNotificationVersion(.v2, environment: .sandbox, appID: "1")
                }
            )
            let token = try ConnectFixture.bearer(try #require(transport.requests.first))
            let signature = String(try #require(token.split(separator: ".").last))
            #expect(error.code == .conflict)
            #expect(error.reason.contains("Apple: 409 ENTITY_ERROR: Refused - you sent Bearer <token>"))
            for text in [error.reason, error.description] {
                #expect(!text.contains(token) && !text.contains(signature))
                for line in pki.ascKeyPEM.split(separator: "\n") where !line.hasPrefix("-----") {
                    #expect(!text.contains(line))
                }
            }
            let apple = try #require(error.reason.range(of: "; Apple: "))
            #expect(error.reason[apple.upperBound...].utf8.count <= AppStoreConnectClient.appleTextLimit)
            #expect(error.reason.hasSuffix("..."))
        }
    }

    @Test func everyCodeHasAStableRawValue() {
        #expect(
            AppStoreConnectError.Code.all.map(\.rawValue) == [
                "unauthorized", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "malformed",
                "bad_request", "invalid_key",
            ]
        )
        #expect(AppStoreConnectError(.conflict, "a") == AppStoreConnectError(.conflict, "b"), "equality is the code's")
    }
}
