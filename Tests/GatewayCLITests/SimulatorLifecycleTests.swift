import Canonical
import Foundation
import Gateway
import GatewayCLI
import HTTPClient
import Simulator
import V2Adapter
import Synchronization
import TestSupport
import HTTPServer
import Store
import Testing
import WireJSON

/// Every simulated lifecycle through the real gateway over HTTP — V2 traffic and V1 traffic separately — with the
/// fake Apple answering verifyReceipt, into a real downstream receiver. Each step is sent by `simulate lifecycle`'s
/// own code and the test waits until the step's events are delivered, so V1's verifyReceipt sees the App Store as it
/// was at that step. It then checks each step's canonical kinds and every subscription's entitlement when the story
/// ends — recomputed from the last delivered event's facts at that moment — against what the lifecycle states, and
/// that V1 and V2 agree wherever Apple's V1 carries enough.
@Suite struct SimulatorLifecycleTests {
    static let secret = "5f1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d"
    static let bundleID = "com.example.sim"

    /// The gateway for one generation: authoritative for the simulated app, delivering to `receiver` (shadow events
    /// too), asking the fake Apple on `apple` for receipts and — with the simulator's API key — the App Store Server API.
    static func startGateway(pki: SimulatorPKI, apple: UInt16, receiver: LoopbackHTTPServer, authority: String, compare: Bool = false,
                             compareSettings: String = "", now: @escaping @Sendable () -> Int64) throws -> (GatewayService, UInt16) {
        let directory = try Scratch.directory()
        let json = """
            {
              "listen": "127.0.0.1:0",
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["\(pki.folder)/root.der"] },
              "verify_receipt": { "production_url": "http://127.0.0.1:\(apple)/verifyReceipt",
                                  "sandbox_url": "http://127.0.0.1:\(apple)/sandbox/verifyReceipt" },
              "app_store_api": { "production_url": "http://127.0.0.1:\(apple)", "sandbox_url": "http://127.0.0.1:\(apple)",
                                 "issuer_id": "\(SimulatorPKI.issuerID)", "key_id": "\(SimulatorPKI.apiKeyID)", "private_key_env": "SIM_API_KEY" },
              "apps": [ { "bundle_id": "\(bundleID)", "environments": ["sandbox"], "shared_secret_env": ["SIM_SECRET"],
                          "authority": "\(authority)", "compare": \(compare), "downstreams": ["main"] } ],
              "downstreams": [ { "name": "main", "url": "\(receiver.url("/events"))", "environments": ["sandbox"], "shadow": true } ],
              \(compareSettings.isEmpty ? "" : "\"compare\": { \(compareSettings) },")
              "limits": { "http_threads": 4 }
            }
            """
        let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
        var deps = GatewayService.Dependencies(
            environment: ["SIM_SECRET": secret, "SIM_API_KEY": pki.apiKeyPEM], transport: CurlTransport(), now: now, jitter: { 0 },
            logSink: { _ in })
        deps.deliveryPolicy.retry.baseDelay = .zero
        deps.deliveryPolicy.pollMillis = 10
        deps.receiptPolicy.pollMillis = 10
        deps.comparePolicy.pollMillis = 10
        deps.comparePolicy.retry.baseDelay = .milliseconds(200)
        deps.verifyReceiptBaseDelay = .zero
        let service = try GatewayService(config: config, dependencies: deps)
        let (port, _) = try service.start()
        return (service, port)
    }

    /// Delivered events in order of first arrival (delivery is at least once: a redelivery is not a new event);
    /// `authoritative` picks one side of the envelope's flag.
    static func events(_ receiver: LoopbackHTTPServer, authoritative: Bool? = nil) -> [JSONObject] {
        var seen = Set<String>()
        return receiver.requests.filter { $0.path == "/events" }.compactMap { r in
            guard let envelope = (try? JSONParser.parse(r.body))?.objectValue, let e = envelope["event"]?.objectValue,
                  let id = e["id"]?.stringValue, seen.insert(id).inserted
            else { return nil }
            if let authoritative, envelope["authoritative"] != .bool(authoritative) { return nil }
            return e
        }
    }

    static func describe(_ e: JSONObject) -> String {
        let kind = e["kind"]?.stringValue ?? "?"
        return e["reason"]?.stringValue.map { "\(kind)[\($0)]" } ?? kind
    }

    /// The entitlement at `time` from what an event says (the same rule as the gateway's, applied later).
    static func entitlement(of e: JSONObject, at time: Int64) -> Entitlement.State {
        Entitlement.compute(
            expiresDate: e["expires_date"]?.int64Value, revocationDate: e["revocation_date"]?.int64Value,
            gracePeriodExpiresDate: e["grace_period_expires_date"]?.int64Value, inBillingRetry: e["in_billing_retry"]?.boolValue,
            at: time
        ).state
    }

    @Test(arguments: Lifecycles.all.map(\.name), ["v1", "v2"])
    func lifecycleEndToEnd(name: String, version: String) async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try SimulatorPKI.loadOrCreate(folder: folder + "/sim", now: WallClock.wallMillis())
        let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport())
        let apple = HTTPServer(configuration: .init(), handler: fake.handle)
        try apple.start()
        defer { apple.stop() }
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        // The gateway's clock is the story's: each notification arrives when its step happens, as with Apple.
        let clock = Mutex(WallClock.wallMillis())
        let (gateway, port) = try Self.startGateway(
            pki: pki, apple: apple.port, receiver: receiver, authority: version, now: { clock.withLock { $0 } })

        var options = SimulateCommand.LifecycleOptions(
            name: name, to: "http://127.0.0.1:\(port)/notifications", pkiFolder: pki.folder, bundleID: Self.bundleID, sharedSecret: Self.secret)
        options.version = version == "v1" ? .v1 : .v2
        let seen = Mutex(0)
        let mismatches = Mutex<[String]>([])
        let run = try await SimulateCommand.lifecycle(
            options, transport: CurlTransport(), now: WallClock.wallMillis, sleep: { _ in }, output: { _ in },
            beforeStep: { e in clock.withLock { $0 = e.at } }
        ) { e in
            let expected = (version == "v1" ? e.expectedV1 : (e.expectedV2.map { [$0] } ?? [])).map(\.description).sorted()
            let before = seen.withLock { $0 }
            let timer = ContinuousClock()
            let deadline = timer.now.advanced(by: GatewayHarness.patience)
            while Self.events(receiver).count < before + expected.count, timer.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            let all = Self.events(receiver)
            let got = all.dropFirst(before).map(Self.describe).sorted()
            seen.withLock { $0 = all.count }
            if got != expected { mismatches.withLock { $0.append("\(e.step): expected \(expected), got \(got)") } }
        }
        #expect(run.ok, "every notification answered 2xx")
        #expect(mismatches.withLock { $0 } == [], "\(name) over \(version)")

        // Where each subscription stands when the story ends: its last event by event date (arrival breaks ties).
        let delivered = Self.events(receiver)
        // Nothing failed, so nothing was sent twice (a poll racing a finishing delivery once re-sent it).
        #expect(receiver.requests.filter { $0.path == "/events" }.count == delivered.count, "no redelivery")
        #expect(delivered.allSatisfy { $0["source"]?.stringValue == version && $0["environment"]?.stringValue == "sandbox" })
        let lifecycle = try #require(Lifecycles.named(name))
        let wanted = version == "v1" ? (lifecycle.v1Final ?? lifecycle.final) : lifecycle.final
        let finals = run.plan.originalTransactionIDs.map { otid -> Entitlement.State? in
            let mine = delivered.enumerated().filter { $0.element["original_transaction_id"]?.stringValue == otid }
            let last = mine.max { ($0.element["event_date"]?.int64Value ?? 0, $0.offset) < ($1.element["event_date"]?.int64Value ?? 0, $1.offset) }
            return last.map { Self.entitlement(of: $0.element, at: run.plan.end) }
        }
        #expect(finals == wanted.map(Optional.some), "\(name) over \(version): final entitlement")
        if version == "v1", lifecycle.v1Complete {
            #expect(wanted == lifecycle.final, "V1 and V2 agree")
        }
        await gateway.shutdown()
    }

    @Test func everyLifecycleHasAUniqueNameAndTheIssuesStoriesAreAllThere() {
        let names = Lifecycles.all.map(\.name)
        #expect(Set(names).count == names.count)
        for required in [
            "initial-buy", "initial-buy-free-trial", "initial-buy-intro-offer", "auto-renew", "auto-renew-off-then-expiry",
            "auto-renew-off-then-on", "billing-grace-recovery", "billing-grace-expired-retry-expired", "upgrade", "downgrade", "crossgrade",
            "resubscribe-after-expiry", "refund", "refund-declined", "refund-reversed", "family-revoke", "price-increase-accepted",
            "price-increase-expired", "renewal-extension", "consumable-consumption-request",
        ] {
            #expect(names.contains(required), "\(required)")
        }
        // The gaps are stated, with a reason, and only where V1 really ends elsewhere.
        for l in Lifecycles.all where !l.v1Complete {
            #expect(l.v1Gap != nil && l.v1Final != l.final)
        }
    }
}

/// The `simulate` verbs' other paths: writing a lifecycle to a folder, and the fake Apple's test notification sent
/// to a running gateway.
@Suite struct SimulateCommandTests {
    @Test func lifecycleWrittenToAFolderVerifiesAndStatesItsExpectations() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try SimulatorPKI.loadOrCreate(folder: folder + "/sim", now: WallClock.wallMillis())
        var options = SimulateCommand.LifecycleOptions(
            name: "upgrade", to: nil, pkiFolder: pki.folder, bundleID: "com.example.sim", sharedSecret: SimulatorLifecycleTests.secret)
        options.out = folder + "/out"
        let run = try await SimulateCommand.lifecycle(
            options, transport: CurlTransport(), now: WallClock.wallMillis, sleep: { _ in }, output: { _ in })
        #expect(run.ok)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/out").sorted()
        // buy: V2 + V1 INITIAL_BUY; upgrade: V2 + V1 DID_CHANGE_RENEWAL_STATUS + INTERACTIVE_RENEWAL.
        #expect(files == ["01-v1-1-INITIAL_BUY.json", "01-v2-SUBSCRIBED-INITIAL_BUY.json", "02-v1-1-DID_CHANGE_RENEWAL_STATUS.json",
                          "02-v1-2-INTERACTIVE_RENEWAL.json", "02-v2-DID_CHANGE_RENEWAL_PREF-UPGRADE.json", "lifecycle.json"])
        let manifest = try #require(try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/out/lifecycle.json")))).objectValue)
        #expect(manifest["final_v2"] == .array([.string("active")]))
        #expect(manifest["steps"]?.arrayValue?.count == 2)
        // The V2 files are what Apple would send: `verify` accepts them when told to trust the simulator's root.
        var verify = VerifyCommand.Options()
        verify.extraRoots = [pki.folder + "/root.der"]
        let command = try VerifyCommand(options: verify, receiptClient: nil)
        for name in files where name.contains("-v2-") {
            let report = await command.run(file: folder + "/out/" + name)
            #expect(report.ok, "\(name)")
        }
        // The V1 bodies carry the shared secret and the simulated receipt, as Apple's do.
        let body = String(decoding: try Data(contentsOf: URL(fileURLWithPath: folder + "/out/01-v1-1-INITIAL_BUY.json")), as: UTF8.self)
        #expect(body.contains(SimulatorLifecycleTests.secret) && body.contains("\"latest_receipt\""))
    }

    @Test func aRequestedTestNotificationReachesTheGatewayAndItsStatusSaysSo() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try SimulatorPKI.loadOrCreate(folder: folder + "/sim", now: WallClock.wallMillis())
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let (gateway, port) = try SimulatorLifecycleTests.startGateway(
            pki: pki, apple: 1, receiver: receiver, authority: "v2", now: WallClock.wallMillis)
        let fake = try FakeAppleServer(pki: pki.folder, notifyURL: "http://127.0.0.1:\(port)/notifications", transport: CurlTransport())
        let apple = HTTPServer(configuration: .init(), handler: fake.handle)
        try apple.start()
        defer { apple.stop() }

        let now = WallClock.wallMillis() / 1000
        let token = try AppStoreAPIToken(keyID: SimulatorPKI.apiKeyID, issuerID: SimulatorPKI.issuerID, bundleID: "com.example.sim",
                                         issuedAt: now, expiresAt: now + 600).signed(with: pki.apiKey)
        let auth = [HTTPHeader("Authorization", "Bearer \(token)")]
        let base = "http://127.0.0.1:\(apple.port)"
        let unauthorized = try await CurlTransport().send(HTTPRequest(method: .post, url: base + "/inApps/v1/notifications/test", timeoutMillis: 10_000))
        #expect(unauthorized.status == 401)
        let requested = try await CurlTransport().send(HTTPRequest(
            method: .post, url: base + "/inApps/v1/notifications/test", headers: auth, timeoutMillis: 10_000))
        #expect(requested.status == 200)
        let testToken = try JSONDecoder().decode(SendTestNotificationResponse.self, from: Data(requested.body)).testNotificationToken
        // The gateway verifies it (sandbox, the simulator's root) and delivers a `test` event.
        let timer = ContinuousClock()
        let deadline = timer.now.advanced(by: GatewayHarness.patience)
        while SimulatorLifecycleTests.events(receiver).isEmpty, timer.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let event = try #require(SimulatorLifecycleTests.events(receiver).first)
        #expect(event["raw_type"]?.stringValue == "TEST" && event["environment"]?.stringValue == "sandbox")
        var status: CheckTestNotificationResponse?
        while timer.now < deadline {
            let r = try await CurlTransport().send(HTTPRequest(
                method: .get, url: base + "/inApps/v1/notifications/test/\(testToken)", headers: auth, timeoutMillis: 10_000))
            status = try JSONDecoder().decode(CheckTestNotificationResponse.self, from: Data(r.body))
            if status?.sendAttempts.isEmpty == false { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(status?.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
        await gateway.shutdown()
    }
}
