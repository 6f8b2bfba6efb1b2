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

@testable import Benchmarks

#if canImport(Glibc)
import Glibc
#endif

/// Refund requests with real processes (docs/operations.md, "Refund requests"): the built `iap-gateway serve`
/// answering Apple's CONSUMPTION_REQUEST, the simulated App Store in this process playing the `refund-request`
/// lifecycle into it and answering Send Consumption Information (recording what it gets, refusing what Apple
/// refuses), and the team's service a loopback server here. Every wait is for a condition.
@Suite(.serialized) struct ConsumptionEndToEndTests {
    static let bundle = SimulatorLifecycleTests.bundleID
    static let askSecret = "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
    static let adminToken = "consumption-admin-token-0123456789"

    struct FixtureError: Error, CustomStringConvertible { var description: String }

    static let grantFull = #"""
        {"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "refundPreference": "GRANT_FULL"}
        """#
    static let decline = #"""
        {"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": true, "refundPreference": "DECLINE"}
        """#

    /// The gateway as a process over a store in `folder`; the fake Apple and the team's service in this one.
    final class Rig: @unchecked Sendable {
        let folder: String
        let pki: SimulatorPKI
        let fake: FakeAppleServer
        let api: HTTPServer
        let team: LoopbackHTTPServer
        let deadline: String
        var gateway: ChildProcess
        var port: UInt16
        var adminPort: UInt16
        let environment: [String: String]

        init(
            deadline: String = "11h",
            team: @escaping @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action
        )
            throws
        {
            folder = try Scratch.directory()
            pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            fake = try FakeAppleServer(
                pki: pki.folder,
                notifyURL: nil,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() }
            )
            api = HTTPServer(configuration: .init(), handler: fake.handle)
            try api.start()
            self.team = try LoopbackHTTPServer { r in r.path == "/alerts" ? .respond(status: 204) : team(r) }
            self.deadline = deadline
            environment = [
                "SIM_API_KEY": pki.apiKeyPEM, "ASK_SECRET": ConsumptionEndToEndTests.askSecret,
                "ADMIN_TOKEN": ConsumptionEndToEndTests.adminToken, "PATH": "/usr/bin:/bin",
            ]
            (gateway, port, adminPort) = (try Self.start(folder, pki, api.port, self.team, deadline, environment))
        }

        /// Starts `serve` on free ports over the rig's store (tried again on other ports if one was taken meanwhile).
        static func start(
            _ folder: String,
            _ pki: SimulatorPKI,
            _ apiPort: UInt16,
            _ team: LoopbackHTTPServer,
            _ deadline: String,
            _ environment: [String: String]
        ) throws -> (ChildProcess, UInt16, UInt16) {
            try MigrationEndToEndTests.startServe(folder: folder, environment: environment) { port, adminPort in
                """
                    {
                      "listen": "127.0.0.1:\(port)",
                      "admin": { "listen": "127.0.0.1:\(adminPort)", "token_env": "ADMIN_TOKEN" },
                      "store": { "sqlite": "gateway.db" },
                      "trust": { "extra_roots": ["\(pki.folder)/root.der"] },
                      "app_store_api": { "production_url": "http://127.0.0.1:\(apiPort)", "sandbox_url": "http://127.0.0.1:\(apiPort)",
                                         "issuer_id": "\(SimulatorPKI.issuerID)", "key_id": "\(SimulatorPKI.apiKeyID)", "private_key_env": "SIM_API_KEY" },
                      "apps": [ { "bundle_id": "\(ConsumptionEndToEndTests.bundle)", "environments": ["sandbox"], "authority": "v2",
                                  "consumption": { "respond": true, "ask_url": "\(team.url("/ask"))", "ask_secret_env": "ASK_SECRET",
                                                   "ask_timeout": "2s", "ask_for": "1s", "deadline": "\(deadline)",
                                                   "retry_delay": "200ms", "max_retry_delay": "1s",
                                                   "default": { "customerConsented": true, "deliveryStatus": "DELIVERED",
                                                                "sampleContentProvided": false, "refundPreference": "DECLINE" } } } ],
                      "alerts": { "webhook": "\(team.url("/alerts"))", "secret_env": "ASK_SECRET" },
                      "reconcile": { "every": "off", "history_sweep": "off" }
                    }
                """
            }
        }

        /// `kill -9` of the gateway, then a new one over the same store.
        func killAndRestart() throws {
            gateway.terminate(signal: SIGKILL)
            (gateway, port, adminPort) = try Self.start(folder, pki, api.port, team, deadline, environment)
        }

        var store: SimStateStore { SimStateStore(folder: pki.folder) }

        /// Plays `refund-request` as V2 traffic into the gateway; Apple waits up to `waitMillis` for the answer.
        /// Returns the line Apple's decision printed.
        func play(waitMillis: Int64) async throws -> JSONObject {
            var options = Simulation.LifecycleOptions(
                name: "refund-request",
                to: "http://127.0.0.1:\(port)/notifications",
                pkiFolder: pki.folder,
                bundleID: ConsumptionEndToEndTests.bundle,
                sharedSecret: SimulatorLifecycleTests.secret
            )
            options.version = .v2
            options.consumptionWaitMillis = waitMillis
            let lines = Mutex<[String]>([])
            let run = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() },
                sleep: { _ in },
                output: { line in lines.withLock { $0.append(line) } }
            )
            #expect(run.ok, "every notification accepted")
            let decision = lines.withLock { $0 }.compactMap { try? JSONParser.parse(Array($0.utf8)).objectValue }
                .first { $0["decision"] != nil }
            return try #require(decision)
        }

        /// The gateway's refund requests (`GET /admin/refund-requests`).
        func requests() async throws -> [JSONObject] {
            (try await adminValue("/admin/refund-requests").arrayValue ?? []).compactMap(\.objectValue)
        }

        func admin(_ path: String) async throws -> JSONObject {
            try await adminValue(path).objectValue ?? JSONObject()
        }

        func adminValue(_ path: String) async throws -> JSONValue {
            try JSONParser.parse(try await adminGet(path))
        }

        /// The body of `GET path` on the admin listener, with the token; anything but a 200 is an error.
        func adminGet(_ path: String) async throws -> [UInt8] {
            let response = try await CurlTransport().send(
                HTTPRequest(
                    method: .get,
                    url: "http://127.0.0.1:\(adminPort)\(path)",
                    headers: [HTTPHeader("Authorization", "Bearer \(ConsumptionEndToEndTests.adminToken)")]
                )
            )
            guard response.status == 200 else { throw FixtureError(description: "admin answered \(response.status)") }
            return response.body
        }

        /// Waits until the only refund request is settled (not `pending`) and its decision is recorded when asked.
        func settled(decided: Bool = true) async throws -> JSONObject {
            let last = Mutex<JSONObject?>(nil)
            await eventually("the refund request settled", within: .seconds(60)) {
                let r = try? await self.requests().first
                last.withLock { $0 = r }
                guard let r, r["state"]?.stringValue != "pending" else { return false }
                return !decided || r["decision"]?.stringValue != nil
            }
            let r = try #require(last.withLock { $0 })
            // One line per request, for the record of a run: how it ended and how long after Apple's request.
            let requested = r["requested_at"]?.int64Value ?? 0
            print(
                "refund-request-e2e state=\(r["state"]?.stringValue ?? "-") source=\(r["answer_source"]?.stringValue ?? "-")"
                    + " asks=\(r["asks"]?.int64Value ?? 0) sends=\(r["sends"]?.int64Value ?? 0)"
                    + " apple=\(r["apple_status"]?.int64Value.map(String.init) ?? "-")"
                    + " sent_after_ms=\(r["sent_at"]?.int64Value.map { String($0 - requested) } ?? "-")"
                    + " deadline_after_ms=\((r["deadline_at"]?.int64Value ?? 0) - requested)"
                    + " decision=\(r["decision"]?.stringValue ?? "-")"
            )
            return r
        }

        func metric(_ name: String) async throws -> String {
            String(decoding: try await adminGet("/metrics"), as: UTF8.self).split(separator: "\n")
                .filter { $0.hasPrefix(name) }.joined(separator: "\n")
        }

        func stop() {
            gateway.terminate()
            api.stop()
            team.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    static func answer(_ json: String, delay: Duration = .zero) -> LoopbackHTTPServer.Action {
        .respond(
            status: 200,
            headers: [HTTPHeader("Content-Type", "application/json")],
            body: Array(json.utf8),
            delay: delay
        )
    }

    // MARK: The team's service

    @Test func theTeamsPreferenceReachesAppleOnceAndAppleDecidesByIt() async throws {
        for (answer, preference, decision) in [
            (Self.grantFull, "GRANT_FULL", "REFUND"), (Self.decline, "DECLINE", "REFUND_DECLINED"),
        ] {
            let rig = try Rig { _ in Self.answer(answer) }
            defer { rig.stop() }
            let outcome = try await rig.play(waitMillis: 20_000)
            #expect(outcome["decision"]?.stringValue == decision)
            let r = try await rig.settled()
            #expect(r["state"]?.stringValue == "sent")
            #expect(r["answer_source"]?.stringValue == "team")
            #expect(r["refund_preference"]?.stringValue == preference)
            #expect(r["sent_at"]?.int64Value ?? .max <= r["deadline_at"]?.int64Value ?? 0, "within the deadline")
            #expect(r["decision"]?.stringValue == decision.lowercased())
            let got = try rig.store.consumptionInfo()
            #expect(got.count == 1 && got.first?.count == 1, "sent once")
            #expect(got.first?.refundPreference == preference)
            #expect(rig.team.requests.filter { $0.path == "/ask" }.count == 1)
            // The report's refund requests: answered in time, the preference sent and Apple's decision after it.
            let report = try await rig.admin("/admin/report?format=json")
            let bundle = try #require(
                report["bundles"]?.arrayValue?.compactMap(\.objectValue).first {
                    $0["bundle_id"]?.stringValue == ConsumptionEndToEndTests.bundle
                }
            )
            let refunds = try #require(bundle["refund_requests"]?.objectValue)
            #expect(refunds["requests"]?.int64Value == 1)
            #expect(refunds["answered_in_time"]?.int64Value == 1)
            let after = try #require(refunds["outcomes"]?.objectValue?[preference]?.objectValue)
            #expect(after[decision == "REFUND" ? "refunded" : "declined"]?.int64Value == 1)
        }
    }

    @Test func aTeamServiceThatTimesOutGetsTheDefaultSent() async throws {
        let rig = try Rig { _ in .hang(.seconds(10)) }
        defer { rig.stop() }
        let outcome = try await rig.play(waitMillis: 20_000)
        #expect(outcome["decision"]?.stringValue == "REFUND_DECLINED", "the default declines")
        let r = try await rig.settled()
        #expect(r["state"]?.stringValue == "sent")
        #expect(r["answer_source"]?.stringValue == "default")
        #expect(try rig.store.consumptionInfo().count == 1)
        #expect(try await rig.metric("iapgw_consumption_asks_total").contains("outcome=\"ask_timeout\""))
    }

    @Test func aTeamServiceThatSays204GetsNothingSent() async throws {
        let rig = try Rig { _ in .respond(status: 204) }
        defer { rig.stop() }
        let outcome = try await rig.play(waitMillis: 1_500)
        #expect(outcome["decision"]?.stringValue == "REFUND", "Apple decides alone")
        let r = try await rig.settled()
        #expect(r["state"]?.stringValue == "declined")
        #expect(try rig.store.consumptionInfo().isEmpty)
    }

    // MARK: Apple's answers

    @Test func appleRefusingTheAnswerIsADeadLetterWithAnAlert() async throws {
        for (status, code) in [(400, 4_000_000), (404, 4_040_010)] {
            let rig = try Rig { _ in Self.answer(Self.grantFull) }
            defer { rig.stop() }
            try rig.store.update { $0.apiFaults = [status] }
            _ = try await rig.play(waitMillis: 1_500)
            let r = try await rig.settled()
            #expect(r["state"]?.stringValue == "rejected")
            #expect(r["apple_status"]?.int64Value == Int64(status))
            #expect(r["apple_error_code"]?.int64Value == Int64(code))
            #expect(r["sends"]?.int64Value == 1, "\(status): not sent again")
            #expect(try await rig.metric("iapgw_consumption_dead_total").contains("} 1"))
            await eventually("the alert") {
                rig.team.requests.contains {
                    $0.path == "/alerts"
                        && String(decoding: $0.body, as: UTF8.self).contains("consumption.dead_lettered")
                }
            }
        }
    }

    @Test func appleRateLimitingIsWaitedOutAndTheAnswerSentOnce() async throws {
        let rig = try Rig { _ in Self.answer(Self.grantFull) }
        defer { rig.stop() }
        try rig.store.update {
            $0.apiFaults = [429]
            $0.apiFaultRetryAfterSeconds = 1
        }
        let outcome = try await rig.play(waitMillis: 20_000)
        #expect(outcome["decision"]?.stringValue == "REFUND")
        let r = try await rig.settled()
        #expect(r["state"]?.stringValue == "sent")
        #expect(r["sends"]?.int64Value == 2, "the 429, then Apple took it")
        #expect(try rig.store.consumptionInfo().count == 1)
    }

    @Test func appleDownUntilTheDeadlineIsRetriedThenDeadLettered() async throws {
        // The simulator signs the request 3 minutes (0.05 of its one-hour month) before the story's end, which is
        // now: a deadline of 195 s leaves Apple 15 s of being down.
        let rig = try Rig(deadline: "195s") { _ in Self.answer(Self.grantFull) }
        defer { rig.stop() }
        try rig.store.update { $0.apiFaults = Array(repeating: 503, count: 1_000) }
        _ = try await rig.play(waitMillis: 0)
        let r = try await rig.settled(decided: false)
        #expect(r["state"]?.stringValue == "dead")
        #expect(r["last_error"]?.stringValue == "apple_unavailable")
        let sends = r["sends"]?.int64Value ?? 0
        #expect(sends >= 3, "retried: \(sends) sends")
        let remaining = (r["deadline_at"]?.int64Value ?? 0) - (r["requested_at"]?.int64Value ?? 0)
        #expect(remaining == 195_000)
        #expect(try rig.store.consumptionInfo().isEmpty)
        #expect(try await rig.metric("iapgw_consumption_dead_total").contains("reason=\"apple_unavailable\"} 1"))
        await eventually("the alert") {
            rig.team.requests.contains { $0.path == "/alerts" }
        }
    }

    // MARK: A crash between the request and the answer

    @Test func aKilledGatewayStillAnswersOnceAfterItsRestart() async throws {
        let asks = Mutex(0)
        let rig = try Rig { _ in
            // The first ask is answered slowly: the gateway is killed while it waits.
            let n = asks.withLock {
                $0 += 1
                return $0
            }
            return Self.answer(Self.grantFull, delay: n == 1 ? .seconds(30) : .zero)
        }
        defer { rig.stop() }
        _ = try await rig.play(waitMillis: 0)
        await eventually("the first ask") { asks.withLock { $0 } >= 1 }
        try rig.killAndRestart()
        let r = try await rig.settled(decided: false)
        #expect(r["state"]?.stringValue == "sent")
        #expect(r["asks"]?.int64Value == 1, "asked again after the restart (the first ask's count died with it)")
        let got = try rig.store.consumptionInfo()
        #expect(got.count == 1 && got.first?.count == 1, "sent once")
        #expect(asks.withLock { $0 } == 2)
    }
}
