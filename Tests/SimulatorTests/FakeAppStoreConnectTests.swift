import AppStoreConnect
import Canonical
import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import Synchronization
import Testing
import V2Adapter
import WireJSON

/// The fake App Store Connect: its token checks, its apps and their settings, the PATCH as Apple checks it, a
/// version change honoured late, queued failures, its control endpoints, and the test notification sent in the version
/// Apple effectively sends.
@Suite struct FakeAppStoreConnectTests {
    static let notifyURL = "https://gateway.example/notifications"

    /// A fake Apple with a fixed clock over a fresh PKI, its App Store Connect knowing the simulated app.
    struct Harness {
        let pki: SimulatorPKI
        let apple: FakeApple
        let now: Int64
        var connect: FakeAppStoreConnect { apple.appStoreConnect }
        var appID: String { SimConnectApp.id(bundleID: Sim.bundleID) }

        init(
            pki: SimulatorPKI,
            now: Int64 = Sim.t0,
            notifyURL: String? = FakeAppStoreConnectTests.notifyURL,
            sendTest: (@Sendable (String, String, String?) -> Void)? = nil
        ) throws {
            (self.pki, self.now) = (pki, now)
            apple = FakeApple(pki: pki, now: { now }, notifyURL: notifyURL, sendTest: sendTest)
            try apple.appStoreConnect.registerApp(bundleID: Sim.bundleID)
        }

        /// A valid App Store Connect token, issued 10 s ago for 15 minutes.
        func token(key: PrivateKey? = nil, keyID: String = SimulatorPKI.ascKeyID) throws -> String {
            try AppStoreConnectToken(
                keyID: keyID,
                issuerID: SimulatorPKI.issuerID,
                issuedAt: now / 1000 - 10,
                expiresAt: now / 1000 + 890
            )
            .signed(with: key ?? pki.ascKey)
        }

        func call(
            _ method: String,
            _ path: String,
            query: [String: String] = [:],
            token: String?,
            body: String = ""
        ) -> FakeAppleResponse {
            apple.handle(
                FakeAppleRequest(
                    method: method,
                    path: path,
                    query: query,
                    authorization: token.map { "Bearer " + $0 },
                    body: Array(body.utf8)
                )
            )
        }

        func get(_ path: String, query: [String: String] = [:]) throws -> FakeAppleResponse {
            call("GET", path, query: query, token: try token())
        }

        func patch(_ id: String, _ body: String) throws -> FakeAppleResponse {
            call("PATCH", "/v1/apps/\(id)", token: try token(), body: body)
        }

        func patchVersion(_ version: String, sandbox: Bool) throws -> FakeAppleResponse {
            let attribute = sandbox ? "subscriptionStatusUrlVersionForSandbox" : "subscriptionStatusUrlVersion"
            return try patch(
                appID,
                #"{"data":{"type":"apps","id":"\#(appID)","attributes":{"\#(attribute)":"\#(version)"}}}"#
            )
        }

        func control(_ method: String, _ path: String, _ query: [String: String] = [:]) -> FakeAppleResponse {
            apple.handle(FakeAppleRequest(method: method, path: "/fake/asc/" + path, query: query))
        }
    }

    static func errors(_ r: FakeAppleResponse) throws -> [ErrorResponse.Item] {
        try JSONDecoder().decode(ErrorResponse.self, from: Data(r.body)).errors
    }

    static func object(_ r: FakeAppleResponse) throws -> JSONObject {
        try #require(try JSONParser.parse(r.body).objectValue)
    }

    // MARK: tokens

    @Test func theBearerTokenIsCheckedLikeApple() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            let now = h.now / 1000
            func status(_ token: String?) -> Int { h.call("GET", "/v1/apps/\(h.appID)", token: token).status }
            func signed(
                _ payload: String,
                header: String = #"{"alg":"ES256","kid":"SIMASCKEY1","typ":"JWT"}"#,
                key: PrivateKey? = nil
            ) throws -> String {
                try CompactES256.sign(header: Array(header.utf8), payload: Array(payload.utf8), key: key ?? pki.ascKey)
            }
            func claims(
                iat: Int64,
                exp: Int64,
                aud: String = "appstoreconnect-v1",
                iss: String = SimulatorPKI.issuerID
            ) -> String {
                #"{"iss":"\#(iss)","iat":\#(iat),"exp":\#(exp),"aud":"\#(aud)"}"#
            }
            #expect(status(try h.token()) == 200)
            #expect(status(try signed(claims(iat: now - 10, exp: now + 600))) == 200, "the crafting is sound")
            #expect(status(nil) == 401)
            #expect(status(try signed(claims(iat: now - 1000, exp: now - 1))) == 401, "expired")
            #expect(
                status(try signed(claims(iat: now - 10, exp: now + 600, aud: "appstoreconnect-v2"))) == 401,
                "wrong audience"
            )
            #expect(
                status(try signed(claims(iat: now - 10, exp: now - 10 + 1201))) == 401,
                "exp more than 20 minutes after iat"
            )
            #expect(status(try signed(claims(iat: now - 10, exp: now - 10 + 1200))) == 200, "20 minutes exactly")
            #expect(
                status(
                    try signed(#"{"iss":"\#(SimulatorPKI.issuerID)","exp":\#(now + 600),"aud":"appstoreconnect-v1"}"#)
                ) == 401,
                "no iat"
            )
            #expect(
                status(try signed(claims(iat: now - 10, exp: now + 600), key: try PrivateKey.generateP256())) == 401,
                "another key"
            )
            #expect(
                status(try h.token(key: pki.apiKey, keyID: SimulatorPKI.apiKeyID)) == 401,
                "the In-App Purchase key"
            )
            #expect(status(try h.token(keyID: "OTHERKEY01")) == 401, "another key id")
            #expect(
                status(try signed(claims(iat: now - 10, exp: now + 600, iss: "11111111-0000-4000-8000-000000000000")))
                    == 401,
                "another issuer"
            )
            let refused = h.call("GET", "/v1/apps", token: "not.a.token")
            #expect(refused.status == 401)
            let error = try #require(try Self.errors(refused).first)
            #expect(error.status == "401" && error.code == "NOT_AUTHORIZED")
            #expect(refused.header("X-Rate-Limit") != nil)
        }
    }

    // MARK: reading

    @Test func appsAreFoundByBundleIDWithStableIDsAndDefaultSettings() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            let list = try JSONDecoder().decode(
                AppsResponse.self,
                from: Data(
                    try h.get(
                        "/v1/apps",
                        query: [
                            "filter[bundleId]": Sim.bundleID, "fields[apps]": AppResource.fields.joined(separator: ","),
                        ]
                    ).body
                )
            )
            let resource = try #require(list.data.first)
            #expect(list.data.count == 1)
            let app = try AppStoreConnectApp(resource: resource)
            #expect(
                app
                    == AppStoreConnectApp(
                        id: h.appID,
                        bundleID: Sim.bundleID,
                        productionURL: Self.notifyURL,
                        productionVersion: .v1,
                        sandboxURL: Self.notifyURL,
                        sandboxVersion: .v1
                    )
            )
            #expect(SimConnectApp.id(bundleID: Sim.bundleID) == h.appID, "stable: computed, not stored")
            #expect(SimConnectApp.id(bundleID: "com.example.other") != h.appID)

            #expect(
                try JSONDecoder().decode(
                    AppsResponse.self,
                    from: Data(try h.get("/v1/apps", query: ["filter[bundleId]": "com.example.unknown"]).body)
                )
                .data.isEmpty
            )
            // The bundles of the simulated App Store are known without registering them.
            let plan = try Sim.plan("initial-buy", pki: pki)
            try h.connect.store.update { world in
                var s = plan.emissions[0].subscription
                s.bundleID = "com.example.bought"
                world.subscriptions[s.originalTransactionID] = s
            }
            #expect(try h.get("/v1/apps/\(SimConnectApp.id(bundleID: "com.example.bought"))").status == 200)

            let missing = try h.get("/v1/apps/1000000001")
            #expect(missing.status == 404)
            #expect(try Self.errors(missing).first?.code == "NOT_FOUND")
            let badField = try h.get("/v1/apps", query: ["fields[apps]": "bundleId,nonsense"])
            #expect(badField.status == 400)
            #expect(try Self.errors(badField).first?.code == "PARAMETER_ERROR.INVALID")
            // Without a notify URL an app has none until one is set.
            let quiet = try Harness(pki: pki, notifyURL: nil)
            let bare = try AppStoreConnectApp(
                resource: JSONDecoder().decode(AppResponse.self, from: Data(try quiet.get("/v1/apps/\(h.appID)").body))
                    .data
            )
            #expect(bare.productionURL == nil && bare.sandboxURL == nil)
            #expect(
                String(decoding: try quiet.get("/v1/apps/\(h.appID)").body, as: UTF8.self).contains(
                    #""subscriptionStatusUrl":null"#
                )
            )
        }
    }

    // MARK: PATCH

    @Test func aPatchSetsTheVersionOrURLOfOneEnvironment() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            let patched = try h.patchVersion("V2", sandbox: true)
            #expect(patched.status == 200)
            let app = try AppStoreConnectApp(
                resource: JSONDecoder().decode(AppResponse.self, from: Data(patched.body)).data
            )
            #expect(app.sandboxVersion == .v2 && app.productionVersion == .v1)
            #expect(
                try h.connect.effectiveVersion(bundleID: Sim.bundleID, environment: .sandbox) == .v2,
                "no lag: honoured at once"
            )

            let url = try h.patch(
                h.appID,
                #"{"data":{"type":"apps","id":"\#(h.appID)","attributes":{"subscriptionStatusUrl":"https://other.example/n"}}}"#
            )
            #expect(url.status == 200)
            #expect(
                try h.connect.state(bundleID: Sim.bundleID, environment: .production).url == "https://other.example/n"
            )
            #expect(try h.connect.state(bundleID: Sim.bundleID, environment: .sandbox).url == Self.notifyURL)
        }
    }

    @Test func aPatchIsRefusedAsAppleRefusesIt() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            let id = h.appID
            let cases: [(String, Int, String)] = [
                ("not json", 422, "ENTITY_UNPROCESSABLE"),
                (#"{"data":{"type":"bundleIds","id":"\#(id)","attributes":{}}}"#, 409, "ENTITY_ERROR.TYPE.INVALID"),
                (#"{"data":{"type":"apps","id":"1000000001","attributes":{}}}"#, 409, "ENTITY_ERROR.ID.INVALID"),
                (
                    #"{"data":{"type":"apps","id":"\#(id)","attributes":{"subscriptionStatusUrlVersion":"V3"}}}"#, 409,
                    "ENTITY_ERROR.ATTRIBUTE.INVALID"
                ),
                (
                    #"{"data":{"type":"apps","id":"\#(id)","attributes":{"subscriptionStatusUrl":"ftp://x"}}}"#, 409,
                    "ENTITY_ERROR.ATTRIBUTE.INVALID"
                ),
                (
                    #"{"data":{"type":"apps","id":"\#(id)","attributes":{"bundleId":"com.example.x"}}}"#, 409,
                    "ENTITY_ERROR.ATTRIBUTE.INVALID"
                ),
            ]
            for (body, status, code) in cases {
                let r = try h.patch(id, body)
                #expect(r.status == status, "\(body)")
                #expect(try Self.errors(r).first?.code == code, "\(body)")
            }
            let pointer = try Self.errors(try h.patch(id, cases[3].0)).first?.source?.pointer
            #expect(pointer == "/data/attributes/subscriptionStatusUrlVersion")
            #expect(
                try h.connect.state(bundleID: Sim.bundleID, environment: .production).version == .v1,
                "nothing changed"
            )
            #expect(h.call("DELETE", "/v1/apps/\(id)", token: try h.token()).status == 405)
            #expect(
                try h.patch("1000000001", #"{"data":{"type":"apps","id":"1000000001","attributes":{}}}"#).status == 404
            )
        }
    }

    // MARK: a late PATCH

    @Test func aLatePatchKeepsSendingTheOldVersionForTheNextNotifications() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            try h.connect.setLag(SimConnectLag(notifications: 2))
            #expect(try h.patchVersion("V2", sandbox: true).status == 200)
            var state = try h.connect.state(bundleID: Sim.bundleID, environment: .sandbox)
            #expect(state.version == .v2, "the API reports the change at once")
            #expect(state.effectiveVersion == .v1 && state.pendingNotifications == 2)
            #expect(
                try h.connect.state(bundleID: Sim.bundleID, environment: .production).effectiveVersion == .v1,
                "production untouched"
            )
            let sent = try (0..<4).map { _ in
                try h.connect.sendNotification(bundleID: Sim.bundleID, environment: .sandbox).version
            }
            #expect(sent == [.v1, .v1, .v2, .v2])
            state = try h.connect.state(bundleID: Sim.bundleID, environment: .sandbox)
            #expect(state.effectiveVersion == .v2 && state.pendingNotifications == 0)

            // Mixed: alternately, old first.
            try h.connect.setLag(SimConnectLag(notifications: 4, mixed: true))
            try h.connect.setVersion(.v1, bundleID: Sim.bundleID, environment: .sandbox)
            let mixed = try (0..<6).map { _ in
                try h.connect.sendNotification(bundleID: Sim.bundleID, environment: .sandbox).version
            }
            #expect(mixed == [.v2, .v1, .v2, .v1, .v1, .v1])

            // Undone before it was honoured: Apple goes on sending what it sent; `immediately` skips the lag.
            try h.connect.setLag(SimConnectLag(notifications: 3))
            try h.connect.setVersion(.v2, bundleID: Sim.bundleID, environment: .production)
            try h.connect.setVersion(.v1, bundleID: Sim.bundleID, environment: .production)
            #expect(try h.connect.state(bundleID: Sim.bundleID, environment: .production).pendingNotifications == 0)
            try h.connect.setVersion(.v2, bundleID: Sim.bundleID, environment: .production, immediately: true)
            #expect(try h.connect.effectiveVersion(bundleID: Sim.bundleID, environment: .production) == .v2)
        }
    }

    // MARK: test notifications

    @Test func theTestNotificationIsSentInTheVersionAppleEffectivelySends() throws {
        try Sim.withPKI { pki throws in
            let sent = Mutex<[(token: String, url: String?)]>([])
            let h = try Harness(pki: pki) { token, _, url in sent.withLock { $0.append((token, url)) } }
            let api = FakeAppleHarness(pki: pki, now: h.now)
            func request() throws -> String {
                try Sim.decode(
                    SendTestNotificationResponse.self,
                    h.apple.handle(
                        FakeAppleRequest(
                            method: "POST",
                            path: "/inApps/v1/notifications/test",
                            authorization: "Bearer " + (try api.token())
                        )
                    )
                ).testNotificationToken
            }
            func attempts(_ token: String) throws -> [String] {
                try Sim.decode(
                    CheckTestNotificationResponse.self,
                    h.apple.handle(
                        FakeAppleRequest(
                            method: "GET",
                            path: "/inApps/v1/notifications/test/\(token)",
                            authorization: "Bearer " + (try api.token())
                        )
                    )
                )
                .sendAttempts.map(\.sendAttemptResult)
            }
            // V1 (the default): there is no V1 test notification; the status says so at once.
            let inV1 = try request()
            #expect(sent.withLock { $0.isEmpty })
            #expect(try attempts(inV1) == ["OTHER"])

            // V2, honoured late by one notification: that test goes nowhere, the next is sent to the app's sandbox URL.
            try h.connect.setLag(SimConnectLag(notifications: 1))
            #expect(try h.patchVersion("V2", sandbox: true).status == 200)
            let late = try request()
            #expect(try attempts(late) == ["OTHER"])
            let inV2 = try request()
            #expect(try attempts(inV2) == [], "sent: its attempt is recorded by whoever delivers it")
            #expect(sent.withLock { $0.map(\.token) } == [inV2])
            #expect(sent.withLock { $0.first?.url } == Self.notifyURL)

            // It follows the sandbox URL App Store Connect holds.
            try h.connect.setURL("https://moved.example/notifications", bundleID: Sim.bundleID, environment: .sandbox)
            _ = try request()
            #expect(sent.withLock { $0.last?.url } == "https://moved.example/notifications")
            // The production setting plays no part: the fake's App Store Server API is the sandbox one.
            try h.connect.setVersion(.v1, bundleID: Sim.bundleID, environment: .production, immediately: true)
            _ = try request()
            #expect(sent.withLock { $0.count } == 3)
        }
    }

    // MARK: failures and control endpoints

    @Test func queuedFailuresAnswerTheNextAuthenticatedCalls() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            try h.connect.failNext(status: 429, retryAfterSeconds: 7, count: 2)
            try h.connect.failNext(status: 403)
            #expect(h.call("GET", "/v1/apps", token: nil).status == 401, "a refused token does not consume a failure")
            let limited = try h.get("/v1/apps")
            #expect(limited.status == 429 && limited.header("Retry-After") == "7")
            #expect(limited.header("X-Rate-Limit") == "user-hour-lim:3600;user-hour-rem:0;")
            #expect(try Self.errors(limited).first?.code == "RATE_LIMIT_EXCEEDED")
            #expect(try h.get("/v1/apps").status == 429)
            #expect(try Self.errors(try h.get("/v1/apps")).first?.code == "FORBIDDEN_ERROR")
            #expect(try h.get("/v1/apps").status == 200)
            try h.connect.failNext(status: 500, count: 3)
            try h.connect.clearFailures()
            #expect(try h.get("/v1/apps").status == 200)
        }
    }

    @Test func theControlEndpointsDriveTheFakeFromOutside() throws {
        try Sim.withPKI { pki throws in
            let h = try Harness(pki: pki)
            let app = ["bundle_id": Sim.bundleID, "environment": "sandbox"]
            var state = try Self.object(h.control("GET", "state", app))
            #expect(
                state["app_id"] == .string(h.appID) && state["version"] == .string("V1")
                    && state["effective_version"] == .string("V1")
            )
            #expect(state["url"] == .string(Self.notifyURL) && state["pending_notifications"] == .number("0"))

            #expect(h.control("POST", "lag", ["notifications": "1", "mode": "late"]).status == 200)
            state = try Self.object(h.control("POST", "version", app.merging(["version": "V2"]) { a, _ in a }))
            #expect(state["version"] == .string("V2") && state["effective_version"] == .string("V1"))
            let first = try Self.object(h.control("POST", "notification", app))
            #expect(first["sent_version"] == .string("V1") && first["effective_version"] == .string("V2"))
            #expect(try Self.object(h.control("POST", "notification", app))["sent_version"] == .string("V2"))

            state = try Self.object(
                h.control("POST", "url", app.merging(["url": "http://127.0.0.1:9/notifications"]) { a, _ in a })
            )
            #expect(state["url"] == .string("http://127.0.0.1:9/notifications"))
            state = try Self.object(h.control("POST", "url", app))
            #expect(state["url"] == .string(Self.notifyURL), "no url: back to the default")

            #expect(
                try Self.object(h.control("POST", "failures", ["status": "409", "count": "2"]))["queued"]
                    == .number("2")
            )
            #expect(try h.get("/v1/apps").status == 409)
            #expect(h.control("DELETE", "failures").status == 200)
            #expect(try h.get("/v1/apps").status == 200)
            let registered = try Self.object(h.control("POST", "apps", ["bundle_id": "com.example.new"]))
            #expect(registered["app_id"] == .string(SimConnectApp.id(bundleID: "com.example.new")))
            #expect(try h.get("/v1/apps/\(SimConnectApp.id(bundleID: "com.example.new"))").status == 200)

            for (method, path, query) in [
                ("GET", "state", ["bundle_id": Sim.bundleID]), ("GET", "state", ["environment": "sandbox"]),
                ("GET", "state", ["bundle_id": Sim.bundleID, "environment": "xcode"]),
                ("POST", "version", app.merging(["version": "V3"]) { a, _ in a }),
                ("POST", "failures", ["status": "200"]), ("POST", "lag", ["notifications": "-1"]),
                ("POST", "lag", ["notifications": "1", "mode": "sometimes"]),
                ("POST", "url", app.merging(["url": "x"]) { a, _ in a }),
            ] {
                let r = h.control(method, path, query)
                #expect(r.status == 400, "\(method) \(path) \(query)")
                #expect(try Self.object(r)["error"]?.stringValue != nil)
            }
            #expect(h.control("GET", "nothing").status == 404)
        }
    }

    @Test func stateWrittenBeforeAppStoreConnectExistedStillLoads() throws {
        try Sim.withPKI { pki throws in
            let store = SimStateStore(folder: pki.folder)
            try Data(
                #"{"nextID":7,"subscriptions":{},"notifications":[],"testNotifications":{},"verifyReceiptFaults":[],"apiFaults":[],"v1Skew":{"expiresOffsetMillis":0,"hideRevocations":false}}"#
                    .utf8
            )
            .write(to: URL(fileURLWithPath: store.path))
            let world = try store.read()
            #expect(world.nextID == 7)
            #expect(world.appStoreConnect == SimAppStoreConnect())
            let h = try Harness(pki: pki)
            #expect(try h.connect.state(bundleID: Sim.bundleID, environment: .sandbox).version == .v1)
        }
    }
}
