import AppStoreConnect
import Canonical
import Crypto
import Foundation
import Gateway
import HTTPClient
import HTTPServer
import ServiceKit
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Store
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

@testable import GatewayCLI

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
    /// With `oldBackend`, the team's old backend is a `v1_passthrough` downstream (`legacy`) at its `/apple/v1`.
    static func startGateway(
        pki: SimulatorPKI,
        apple: UInt16,
        receiver: LoopbackHTTPServer,
        authority: String,
        compare: Bool = false,
        compareSettings: String = "",
        oldBackend: LoopbackHTTPServer? = nil,
        now: @escaping @Sendable () -> Int64
    ) throws -> (GatewayService, UInt16) {
        let directory = try Scratch.directory()
        let legacy = oldBackend.map {
            #", { "name": "legacy", "kind": "v1_passthrough", "url": "\#($0.url("/apple/v1"))", "environments": ["sandbox"] }"#
        }
        let names = oldBackend == nil ? #"["main"]"# : #"["main", "legacy"]"#
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
                          "authority": "\(authority)", "compare": \(compare), "downstreams": \(names) } ],
              "downstreams": [ { "name": "main", "url": "\(receiver.url("/events"))", "environments": ["sandbox"], "shadow": true }\(legacy ?? "") ],
              \(compareSettings.isEmpty ? "" : "\"compare\": { \(compareSettings) },")
              "limits": { "http_threads": 4 }
            }
            """
        let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
        var deps = GatewayService.Dependencies(
            environment: ["SIM_SECRET": secret, "SIM_API_KEY": pki.apiKeyPEM],
            transport: CurlTransport(),
            now: now,
            jitter: { 0 },
            logSink: { _ in }
        )
        deps.deliveryTuning.retry.baseDelay = .zero
        deps.deliveryTuning.pollMillis = 10
        deps.receiptTuning.pollMillis = 10
        deps.compareTuning.pollMillis = 10
        deps.compareTuning.retry.baseDelay = .milliseconds(200)
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
            expiresDate: e["expires_date"]?.int64Value,
            revocationDate: e["revocation_date"]?.int64Value,
            gracePeriodExpiresDate: e["grace_period_expires_date"]?.int64Value,
            inBillingRetry: e["in_billing_retry"]?.boolValue,
            at: time
        ).state
    }

    @Test(arguments: Lifecycles.all.map(\.name), ["v1", "v2"])
    func lifecycleEndToEnd(name: String, version: String) async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport())
        let apple = HTTPServer(configuration: .init(), handler: fake.handle)
        try apple.start()
        defer { apple.stop() }
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        // The gateway's clock is the story's: each notification arrives when its step happens, as with Apple.
        let clock = Mutex(WallClock.wallMillis())
        let (gateway, port) = try Self.startGateway(
            pki: pki,
            apple: apple.port,
            receiver: receiver,
            authority: version,
            now: { clock.withLock { $0 } }
        )

        var options = Simulation.LifecycleOptions(
            name: name,
            to: "http://127.0.0.1:\(port)/notifications",
            pkiFolder: pki.folder,
            bundleID: Self.bundleID,
            sharedSecret: Self.secret
        )
        options.version = version == "v1" ? .v1 : .v2
        let seen = Mutex(0)
        let mismatches = Mutex<[String]>([])
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: WallClock.wallMillis,
            sleep: { _ in },
            output: { _ in },
            beforeStep: { e in clock.withLock { $0 = e.at } }
        ) { e in
            let expected = (version == "v1" ? e.expectedV1 : (e.expectedV2.map { [$0] } ?? [])).map(\.description)
                .sorted()
            let before = seen.withLock { $0 }
            // Not recorded by the wait: a step that did not cause what it should is reported below, with what came.
            await eventually("\(e.step)'s events", recordsIssue: false) {
                Self.events(receiver).count >= before + expected.count
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
        #expect(
            delivered.allSatisfy { $0["source"]?.stringValue == version && $0["environment"]?.stringValue == "sandbox" }
        )
        let lifecycle = try #require(Lifecycles.named(name))
        let wanted = version == "v1" ? (lifecycle.v1Final ?? lifecycle.final) : lifecycle.final
        let finals = run.plan.originalTransactionIDs.map { otid -> Entitlement.State? in
            let mine = delivered.enumerated().filter { $0.element["original_transaction_id"]?.stringValue == otid }
            let last = mine.max {
                ($0.element["event_date"]?.int64Value ?? 0, $0.offset) < (
                    $1.element["event_date"]?.int64Value ?? 0, $1.offset
                )
            }
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
            "initial-buy", "initial-buy-free-trial", "initial-buy-intro-offer", "auto-renew",
            "auto-renew-off-then-expiry",
            "auto-renew-off-then-on", "billing-grace-recovery", "billing-grace-expired-retry-expired", "upgrade",
            "downgrade", "crossgrade",
            "resubscribe-after-expiry", "refund", "refund-declined", "refund-reversed", "family-revoke",
            "price-increase-accepted",
            "price-increase-expired", "renewal-extension", "consumable-consumption-request", "group-buy",
            "group-add-seats", "group-reduce-at-renewal", "group-seat-refund", "group-whole-refund",
            "group-member-joins-and-leaves", "group-unclaim",
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
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        var options = Simulation.LifecycleOptions(
            name: "upgrade",
            to: nil,
            pkiFolder: pki.folder,
            bundleID: "com.example.sim",
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.out = folder + "/out"
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: WallClock.wallMillis,
            sleep: { _ in },
            output: { _ in }
        )
        #expect(run.ok)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/out").sorted()
        // buy: V2 + V1 INITIAL_BUY; upgrade: V2 + V1 DID_CHANGE_RENEWAL_STATUS + INTERACTIVE_RENEWAL.
        #expect(
            files == [
                "01-v1-1-INITIAL_BUY.json", "01-v2-SUBSCRIBED-INITIAL_BUY.json",
                "02-v1-1-DID_CHANGE_RENEWAL_STATUS.json",
                "02-v1-2-INTERACTIVE_RENEWAL.json", "02-v2-DID_CHANGE_RENEWAL_PREF-UPGRADE.json", "lifecycle.json",
            ]
        )
        let manifest = try #require(
            try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/out/lifecycle.json"))))
                .objectValue
        )
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
        let body = String(
            decoding: try Data(contentsOf: URL(fileURLWithPath: folder + "/out/01-v1-1-INITIAL_BUY.json")),
            as: UTF8.self
        )
        #expect(body.contains(SimulatorLifecycleTests.secret) && body.contains("\"latest_receipt\""))
    }

    @Test func aRequestedTestNotificationReachesTheGatewayAndItsStatusSaysSo() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let (gateway, port) = try SimulatorLifecycleTests.startGateway(
            pki: pki,
            apple: 1,
            receiver: receiver,
            authority: "v2",
            now: WallClock.wallMillis
        )
        let fake = try FakeAppleServer(
            pki: pki.folder,
            notifyURL: "http://127.0.0.1:\(port)/notifications",
            transport: CurlTransport()
        )
        // Apple sends test notifications in V2 only: the app's sandbox notifications are V2.
        try fake.appStoreConnect.setVersion(.v2, bundleID: "com.example.sim", environment: .sandbox, immediately: true)
        let apple = HTTPServer(configuration: .init(), handler: fake.handle)
        try apple.start()
        defer { apple.stop() }

        let now = WallClock.wallMillis() / 1000
        let token = try AppStoreAPIToken(
            keyID: SimulatorPKI.apiKeyID,
            issuerID: SimulatorPKI.issuerID,
            bundleID: "com.example.sim",
            issuedAt: now,
            expiresAt: now + 600
        ).signed(with: pki.apiKey)
        let auth = [HTTPHeader("Authorization", "Bearer \(token)")]
        let base = "http://127.0.0.1:\(apple.port)"
        let unauthorized = try await CurlTransport().send(
            HTTPRequest(method: .post, url: base + "/inApps/v1/notifications/test", timeoutMillis: 10_000)
        )
        #expect(unauthorized.status == 401)
        let requested = try await CurlTransport().send(
            HTTPRequest(
                method: .post,
                url: base + "/inApps/v1/notifications/test",
                headers: auth,
                timeoutMillis: 10_000
            )
        )
        #expect(requested.status == 200)
        let testToken = try JSONDecoder().decode(SendTestNotificationResponse.self, from: Data(requested.body))
            .testNotificationToken
        // The gateway verifies it (sandbox, the simulator's root) and delivers a `test` event.
        await eventually("the test event delivered") { !SimulatorLifecycleTests.events(receiver).isEmpty }
        let event = try #require(SimulatorLifecycleTests.events(receiver).first)
        #expect(event["raw_type"]?.stringValue == "TEST" && event["environment"]?.stringValue == "sandbox")
        var status: CheckTestNotificationResponse?
        try await eventually("the test notification's send attempt") {
            let r = try await CurlTransport().send(
                HTTPRequest(
                    method: .get,
                    url: base + "/inApps/v1/notifications/test/\(testToken)",
                    headers: auth,
                    timeoutMillis: 10_000
                )
            )
            status = try JSONDecoder().decode(CheckTestNotificationResponse.self, from: Data(r.body))
            return status?.sendAttempts.isEmpty == false
        }
        #expect(status?.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
        await gateway.shutdown()
    }
}

/// Lossy traffic (`simulate lifecycle --drop/--seed/--outage`): withheld steps never reach the gateway, while the fake
/// Apple still holds the truth (the subscription as it is, the notification in Get Notification History with a
/// failed send attempt); and the fake Apple over real HTTP, as clients we did not write reach it.
@Suite struct SimulateLossyTrafficTests {
    /// A fresh PKI folder, a receiver standing in for the gateway, and a lifecycle run into it with `drop`.
    static func run(
        _ name: String,
        version: Simulation.LifecycleOptions.Version = .both,
        drop: DropPlan?,
        _ body: (SimulatorPKI, LoopbackHTTPServer, Simulation.LifecycleRun, [String]) throws -> Void
    ) async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { receiver.stop() }
        var options = Simulation.LifecycleOptions(
            name: name,
            to: receiver.url("/notifications"),
            pkiFolder: pki.folder,
            bundleID: SimulatorLifecycleTests.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = version
        options.drop = drop
        let lines = Mutex<[String]>([])
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: WallClock.wallMillis,
            sleep: { _ in },
            output: { line in lines.withLock { $0.append(line) } }
        )
        try body(pki, receiver, run, lines.withLock { $0 })
    }

    /// A body sent to the gateway, in short: `v2 <notificationUUID>` or `v1 <notification_type>`.
    static func describe(_ body: [UInt8]) -> String {
        guard let object = (try? JSONParser.parse(body))?.objectValue else { return "not JSON" }
        if let jws = object["signedPayload"]?.stringValue {
            let payload =
                jws.split(separator: ".").dropFirst().first.flatMap {
                    try? Base64.decode(Array($0.utf8), alphabet: .url)
                } ?? []
            return "v2 " + ((try? JSONParser.parse(payload))?.objectValue?["notificationUUID"]?.stringValue ?? "?")
        }
        return "v1 " + (object["notification_type"]?.stringValue ?? "?")
    }

    /// A bearer token as Apple's Python library signs it (no `iat`), good for five minutes from `now` (ms).
    static func pythonToken(_ pki: SimulatorPKI, now: Int64) throws -> String {
        let header = Base64.encode(
            Array(#"{"alg":"ES256","kid":"\#(SimulatorPKI.apiKeyID)","typ":"JWT"}"#.utf8),
            alphabet: .url
        )
        let claims =
            #"{"bid":"\#(SimulatorLifecycleTests.bundleID)","iss":"\#(SimulatorPKI.issuerID)","aud":"appstoreconnect-v1","exp":\#(now / 1000 + 300)}"#
        let input = header + "." + Base64.encode(Array(claims.utf8), alphabet: .url)
        return input + "." + Base64.encode(try pki.apiKey.signES256(Array(input.utf8)), alphabet: .url)
    }

    /// Get Notification History of everything, as the fake Apple of `pki`'s state answers it now.
    static func history(_ pki: SimulatorPKI, onlyFailures: Bool) throws -> NotificationHistoryResponse {
        let now = WallClock.wallMillis()
        let apple = FakeApple(pki: pki, now: { now })
        let response = apple.handle(
            FakeAppleRequest(
                method: "POST",
                path: "/inApps/v1/notifications/history",
                authorization: "Bearer " + (try pythonToken(pki, now: now)),
                body: Array(#"{"startDate": 0, "endDate": \#(now), "onlyFailures": \#(onlyFailures)}"#.utf8)
            )
        )
        try #require(response.status == 200)
        return try JSONDecoder().decode(NotificationHistoryResponse.self, from: Data(response.body))
    }

    @Test func anOutageWithholdsItsStepsButTheFakeAppleKnowsThem() async throws {
        try await Self.run("auto-renew", drop: try DropPlan(outage: 2...2)) { pki, receiver, run, lines in
            #expect(run.ok, "withheld bodies are not failures")
            let e = run.plan.emissions
            try #require(e.count == 3)
            // Steps 1 and 3 arrive, V2 and V1; step 2 (the first renewal) does not.
            let sent = receiver.requests.map { Self.describe($0.body) }
            let expected = [0, 2].flatMap { i in
                ["v2 " + (e[i].v2NotificationUUID ?? "")] + e[i].v1Bodies.map { "v1 " + ($0.notificationType ?? "") }
            }
            #expect(sent == expected)
            // The step's line says so, and the lifecycle's last line lists it.
            let stepLine = try #require(try JSONParser.parse(Array(lines[1].utf8)).objectValue)
            #expect(stepLine["v2"]?.objectValue?["dropped"] == .string("outage"))
            #expect(stepLine["v1"]?.arrayValue?.first?.objectValue?["dropped"] == .string("outage"))
            #expect(lines.count == 4)
            let summary = try #require(try JSONParser.parse(Array(lines[3].utf8)).objectValue?["dropped"]?.objectValue)
            #expect(summary["steps"] == .number("1") && summary["notifications"] == .number("2"))
            let item = try #require(summary["items"]?.arrayValue?.first?.objectValue)
            #expect(item["step"] == .number("2") && item["reason"] == .string("outage"))
            #expect(item["v2"]?.objectValue?["notification_uuid"] == .string(e[1].v2NotificationUUID ?? ""))
            #expect(item["v2"]?.objectValue?["type"] == .string("DID_RENEW"))
            #expect(item["v1"] == .array([.string("DID_RENEW")]))
            #expect(run.dropped.map(\.step) == [2] && run.dropped.first?.count == 2)

            // The fake Apple holds the truth: all three notifications, step 2's failed; the subscription as it ends.
            let all = try Self.history(pki, onlyFailures: false).notificationHistory
            #expect(all.map(\.signedPayload) == e.compactMap(\.v2SignedPayload))
            #expect(
                all.map { $0.sendAttempts.map(\.sendAttemptResult) } == [["SUCCESS"], ["NO_RESPONSE"], ["SUCCESS"]]
            )
            let failures = try Self.history(pki, onlyFailures: true).notificationHistory
            #expect(failures.map(\.signedPayload) == [e[1].v2SignedPayload])
            let world = try SimStateStore(folder: pki.folder).read()
            #expect(world.subscriptions[e[2].originalTransactionID] == e[2].subscription)
        }
    }

    /// The command drops exactly the steps ``DropPlan`` names for the lifecycle, so in-process tests can use the
    /// same rule.
    @Test func randomDropsFollowTheDropPlan() async throws {
        let plan = try DropPlan(fraction: 0.5, seed: 7)
        try await Self.run("price-increase-accepted", version: .v2, drop: plan) { pki, receiver, run, lines in
            let e = run.plan.emissions
            let kept = e.indices.filter { !plan.drops(emissionAt: $0, of: "price-increase-accepted") }
            let dropped = e.indices.filter { plan.drops(emissionAt: $0, of: "price-increase-accepted") }
            try #require(!kept.isEmpty && !dropped.isEmpty, "the seed drops some and keeps some of this story")
            #expect(
                receiver.requests.map { Self.describe($0.body) }
                    == kept.map { "v2 " + (e[$0].v2NotificationUUID ?? "") }
            )
            #expect(run.dropped.map(\.step) == dropped.map { $0 + 1 })
            #expect(run.dropped.allSatisfy { $0.reason == .random && $0.v1.isEmpty && $0.v2 != nil })
            let failures = try Self.history(pki, onlyFailures: true).notificationHistory
            #expect(failures.map(\.signedPayload) == dropped.map { e[$0].v2SignedPayload })
            #expect(failures.allSatisfy { $0.sendAttempts.map(\.sendAttemptResult) == ["TIMED_OUT"] })
            #expect(lines.last?.contains("\"dropped\":{\"items\"") == true)
        }
    }

    /// Without the flags nothing changes: every step sent, no summary line.
    @Test func withoutADropPlanEveryStepIsSent() async throws {
        try await Self.run("auto-renew", drop: nil) { _, receiver, run, lines in
            #expect(run.dropped.isEmpty && lines.count == run.plan.emissions.count)
            #expect(receiver.requests.count == run.plan.emissions.reduce(0) { $0 + 1 + $1.v1Bodies.count })
            #expect(!lines.contains { $0.contains("dropped") })
        }
    }

    @Test func lossyFlagsAreChecked() async throws {
        let base = ["lifecycle", "refund", "--pki", "/nonexistent", "--bundle-id", "b", "--shared-secret-env", "PATH"]
        let to = ["--to", "http://127.0.0.1:1/notifications"]
        for (flags, message) in [
            (["--drop", "1.5"], "--drop must be a fraction from 0 to 1"),
            (["--drop", "x"], "--drop must be a fraction"),
            (["--drop", "0.1", "--seed", "-1"], "--seed must be a whole number"),
            (["--seed", "3"], "--seed goes with --drop"),
            (["--outage", "0..2"], "--outage must be FROM..TO"), (["--outage", "3..2"], "--outage must be FROM..TO"),
            (["--outage", "2...4"], "--outage must be FROM..TO"), (["--outage", "a..b"], "--outage must be FROM..TO"),
        ] {
            await CommandLineTests.expectUsage(SimulateCommand.self, base + to + flags, message)
        }
        await CommandLineTests.expectUsage(
            SimulateCommand.self,
            base + ["--out", "/tmp/x", "--drop", "0.5"],
            "--drop and --outage need --to URL"
        )
        await CommandLineTests.expectUsage(
            SimulateCommand.self,
            ["serve-apple", "--pki", "x", "--rate-limit", "fast"],
            "--rate-limit must be"
        )
        for bad in ["fast", "0", "-5", "10/s", ""] {
            await CommandLineTests.expectUsage(
                SimulateCommand.self,
                ["serve-apple", "--pki", "x", "--apple-rate", bad],
                "--apple-rate must be"
            )
        }
        await CommandLineTests.expectUsage(
            SimulateCommand.self,
            ["serve-apple", "--pki", "x", "--drop", "0.5"],
            "does not take --drop"
        )
    }

    @Test func rateLimitSettings() {
        #expect(
            SimulateCommand.rateLimitSetting("10/s") == .some(SimWorld.APIRateLimit(requests: 10, windowSeconds: 1))
        )
        #expect(
            SimulateCommand.rateLimitSetting("50/m") == .some(SimWorld.APIRateLimit(requests: 50, windowSeconds: 60))
        )
        #expect(
            SimulateCommand.rateLimitSetting("3600/h")
                == .some(SimWorld.APIRateLimit(requests: 3600, windowSeconds: 3600))
        )
        #expect(
            SimulateCommand.rateLimitSetting("5/30") == .some(SimWorld.APIRateLimit(requests: 5, windowSeconds: 30))
        )
        #expect(SimulateCommand.rateLimitSetting("off") == .some(nil))
        for junk in ["", "10", "0/s", "-1/s", "10/d", "10/0", "10/86401", "ten/s", "10/s/s"] {
            #expect(SimulateCommand.rateLimitSetting(junk) == nil, "\(junk)")
        }
    }

    /// Over HTTP: repeated query parameters reach the fake (a refunded subscription filtered on `status=1&status=5`),
    /// and a 429 carries `Retry-After`.
    @Test func theFakeAppleOverHTTPSeesRepeatedParametersAndSendsRetryAfter() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        var options = Simulation.LifecycleOptions(
            name: "refund",
            to: nil,
            pkiFolder: pki.folder,
            bundleID: SimulatorLifecycleTests.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.out = folder + "/out"
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: WallClock.wallMillis,
            sleep: { _ in },
            output: { _ in }
        )
        let now = WallClock.wallMillis()
        let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport(), now: { now })
        let apple = HTTPServer(configuration: .init(), handler: fake.handle)
        try apple.start()
        defer { apple.stop() }
        let auth = [HTTPHeader("Authorization", "Bearer " + (try Self.pythonToken(pki, now: now)))]
        let url =
            "http://127.0.0.1:\(apple.port)/inApps/v1/subscriptions/\(try #require(run.plan.originalTransactionIDs.first))"
        func statuses(_ query: String) async throws -> [Int] {
            let r = try await CurlTransport().send(
                HTTPRequest(method: .get, url: url + query, headers: auth, timeoutMillis: 10_000)
            )
            try #require(r.status == 200)
            return try JSONDecoder().decode(StatusResponse.self, from: Data(r.body)).data.flatMap(\.lastTransactions)
                .map(\.status)
        }
        #expect(try await statuses("?status=1&status=5") == [5], "the second status reaches the fake")
        #expect(try await statuses("?status=1&status=2").isEmpty)

        try SimStateStore(folder: pki.folder).update {
            $0.apiRateLimit = SimWorld.APIRateLimit(requests: 1, windowSeconds: 60)
        }
        _ = try await statuses("")
        let limited = try await CurlTransport().send(
            HTTPRequest(method: .get, url: url, headers: auth, timeoutMillis: 10_000)
        )
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") == "60")
        #expect(limited.header("Content-Type") == "application/json")
        #expect(
            String(decoding: limited.body, as: UTF8.self)
                == #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#
        )
    }
}
