import AppStoreConnect
import Canonical
import Foundation
import Gateway
import HTTPClient
import HTTPServer
import ServiceKit
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

@testable import GatewayCLI

/// The simulator following App Store Connect: `simulate pki` writes the team key, and `simulate lifecycle --version
/// apple` sends each step in the version a `serve-apple` (here on loopback, over real HTTP) says Apple sends at that
/// moment — including a version change Apple honours late — after the App Store Connect client changed it.
@Suite struct SimulateAppStoreConnectTests {
    static let bundleID = SimulatorLifecycleTests.bundleID

    @Test func simulatePKIWritesTheAppStoreConnectKeyAndPrintsItsIDs() throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let line = try SimulateCommand.pki(out: folder + "/sim", now: WallClock.wallMillis())
        let printed = try #require(try JSONParser.parse(Array(line.utf8)).objectValue)
        #expect(printed["asc_key"] == .string(folder + "/sim/asc-key.p8"))
        #expect(printed["asc_key_id"] == .string(SimulatorPKI.ascKeyID))
        #expect(printed["issuer_id"] == .string(SimulatorPKI.issuerID))
        #expect(printed["key_id"] == .string(SimulatorPKI.apiKeyID))
        let pem = String(
            decoding: try #require(FileManager.default.contents(atPath: folder + "/sim/asc-key.p8")),
            as: UTF8.self
        )
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // What `app_store_connect.private_key_env` must hold: a team key the client takes.
        let credentials = try AppStoreConnectCredentials(
            issuerID: SimulatorPKI.issuerID,
            keyID: SimulatorPKI.ascKeyID,
            privateKeyPEM: pem
        )
        #expect(
            credentials.privateKey.publicKey.subjectPublicKeyInfo
                == (try SimulatorPKI.load(folder: folder + "/sim")).ascKey.publicKey.subjectPublicKeyInfo
        )
        // A second run keeps the key.
        _ = try SimulateCommand.pki(out: folder + "/sim", now: WallClock.wallMillis())
        #expect(
            String(
                decoding: try #require(FileManager.default.contents(atPath: folder + "/sim/asc-key.p8")),
                as: UTF8.self
            ) == pem
        )
    }

    /// What reached the gateway stand-in, per step of the last run: `v1` (V1 bodies only), `v2` (the V2 notification
    /// only) or `none`.
    static func sent(_ receiver: LoopbackHTTPServer, since: Int) -> [String] {
        receiver.requests.dropFirst(since).map { r in
            (try? JSONParser.parse(r.body))?.objectValue?["signedPayload"] != nil ? "v2" : "v1"
        }
    }

    @Test func versionAppleFollowsTheFakeApplesStateStepByStep() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { receiver.stop() }
        let fake = try FakeAppleServer(
            pki: pki.folder,
            notifyURL: receiver.url("/notifications"),
            transport: CurlTransport()
        )
        let server = HTTPServer(configuration: .init(), handler: fake.handle)
        try server.start()
        defer { server.stop() }
        let apple = "http://127.0.0.1:\(server.port)"

        func run(_ name: String) async throws -> (run: Simulation.LifecycleRun, lines: [JSONObject], sent: [String]) {
            let before = receiver.requests.count
            var options = Simulation.LifecycleOptions(
                name: name,
                to: receiver.url("/notifications"),
                pkiFolder: pki.folder,
                bundleID: Self.bundleID,
                sharedSecret: SimulatorLifecycleTests.secret
            )
            options.version = .apple
            options.apple = apple
            let lines = Mutex<[JSONObject]>([])
            let run = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: WallClock.wallMillis,
                sleep: { _ in },
                output: { line in
                    if let o = (try? JSONParser.parse(Array(line.utf8)))?.objectValue {
                        lines.withLock { $0.append(o) }
                    }
                }
            )
            return (run, lines.withLock { $0 }, Self.sent(receiver, since: before))
        }
        func state() async throws -> JSONObject {
            let r = try await CurlTransport().send(
                HTTPRequest(
                    method: .get,
                    url: apple + "/fake/asc/state?bundle_id=\(Self.bundleID)&environment=sandbox",
                    timeoutMillis: 10_000
                )
            )
            return try #require(try JSONParser.parse(r.body).objectValue)
        }

        // Apple sends V1 until told otherwise: every step in V1 (auto-renew: a V1 body for each of its three steps).
        let first = try await run("auto-renew")
        #expect(first.run.ok)
        #expect(first.lines.map { $0["apple_version"] } == Array(repeating: .string("V1"), count: 3))
        #expect(first.sent == ["v1", "v1", "v1"])
        #expect(first.lines.allSatisfy { $0["v2"] == nil && $0["v1"] != nil })

        // The switch: App Store Connect's client PATCHes V2 for sandbox over HTTP, and Apple honours it one notification late.
        let lag = try await CurlTransport().send(
            HTTPRequest(method: .post, url: apple + "/fake/asc/lag?notifications=1", timeoutMillis: 10_000)
        )
        #expect(lag.status == 200)
        let client = AppStoreConnectClient(
            baseURL: apple,
            credentials: AppStoreConnectCredentials(
                issuerID: SimulatorPKI.issuerID,
                keyID: SimulatorPKI.ascKeyID,
                privateKey: pki.ascKey
            ),
            transport: CurlTransport(),
            now: WallClock.wallMillis
        )
        let app = try await client.findApp(bundleID: Self.bundleID)
        #expect(app.sandboxVersion == .v1 && app.sandboxURL == receiver.url("/notifications"))
        let updated = try await client.setNotificationVersion(.v2, environment: .sandbox, appID: app.id)
        #expect(updated.sandboxVersion == .v2)
        var now = try await state()
        #expect(
            now["version"] == .string("V2") && now["effective_version"] == .string("V1")
                && now["pending_notifications"] == .number("1")
        )

        // The first step still goes out in V1, the rest in V2; Get Notification History holds the V2 ones only.
        let second = try await run("auto-renew")
        #expect(second.run.ok)
        #expect(second.lines.map { $0["apple_version"] } == [.string("V1"), .string("V2"), .string("V2")])
        #expect(second.sent == ["v1", "v2", "v2"])
        now = try await state()
        #expect(now["effective_version"] == .string("V2") && now["pending_notifications"] == .number("0"))
        let recorded = try SimStateStore(folder: pki.folder).read().notifications.map(\.notificationUUID)
        #expect(recorded == second.run.plan.emissions.dropFirst().compactMap(\.v2NotificationUUID))

        // And back: the undo is honoured at once without a lag.
        _ = try await CurlTransport().send(
            HTTPRequest(method: .post, url: apple + "/fake/asc/lag?notifications=0", timeoutMillis: 10_000)
        )
        #expect(
            try await client.setNotificationVersion(.v1, environment: .sandbox, appID: app.id).sandboxVersion == .v1
        )
        let third = try await run("initial-buy")
        #expect(third.sent == ["v1"])
    }

    @Test func versionAppleWithoutAFakeAppleFailsClearly() async throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
        var options = Simulation.LifecycleOptions(
            name: "initial-buy",
            to: "http://127.0.0.1:1/notifications",
            pkiFolder: pki.folder,
            bundleID: Self.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = .apple
        options.apple = "http://127.0.0.1:1"
        let error = await #expect(throws: SimulatorError.self) {
            _ = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: WallClock.wallMillis,
                sleep: { _ in },
                output: { _ in }
            )
        }
        #expect(error?.code == "apple_unreachable")
        options.apple = nil
        let usage = await #expect(throws: SimulatorError.self) {
            _ = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: WallClock.wallMillis,
                sleep: { _ in },
                output: { _ in }
            )
        }
        #expect(usage?.code == "usage")
    }
}
