import Canonical
import Foundation
import Gateway
import HTTPClient
import HTTPServer
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

@testable import Benchmarks
@testable import GatewayCLI

#if canImport(Glibc)
import Glibc
import ServiceKit
#endif

/// `iap-gateway receipts prefetch` with real processes (docs/commands.md, "receipts prefetch"): the built binary on a
/// store the gateway journaled simulated lifecycles into, against the simulated App Store's App Store Server API in
/// this process (each Get Transaction History call counted).
@Suite(.serialized) struct ReceiptPrefetchEndToEndTests {
    static let bundle = SimulatorLifecycleTests.bundleID

    /// Get Transaction History calls the fake answered.
    final class CallCount: Sendable {
        private let count = Atomic<Int>(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    final class Rig: @unchecked Sendable {
        let folder: String
        let fake: FakeAppleServer
        let api: HTTPServer
        let environment: [String: String]
        let historyCalls = CallCount()
        /// The subscriptions journaled.
        var customers: Set<String> = []

        /// The gateway journals `lifecycles` of the simulator and stops; `transactionHistoryPerSecond` is the
        /// configured production rate of Get Transaction History (the sandbox's budget is a tenth of it).
        init(lifecycles: Int, transactionHistoryPerSecond: Int = 500) async throws {
            folder = try Scratch.directory()
            let pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            let fake = try FakeAppleServer(
                pki: pki.folder,
                notifyURL: nil,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() }
            )
            self.fake = fake
            let calls = historyCalls
            api = HTTPServer(configuration: .init()) { request in
                if request.path.contains("/history/") { calls.add() }
                return fake.handle(request)
            }
            try api.start()
            environment = [
                "SIM_SECRET": SimulatorLifecycleTests.secret, "SIM_API_KEY": pki.apiKeyPEM, "PATH": "/usr/bin:/bin",
            ]
            let (api, folder) = (api, folder)
            let (gateway, port, _) = try MigrationEndToEndTests.startServe(folder: folder, environment: environment) {
                port,
                adminPort in
                """
                    {
                      "listen": "127.0.0.1:\(port)",
                      "admin": { "listen": "127.0.0.1:\(adminPort)", "token_env": "ADMIN_TOKEN" },
                      "store": { "sqlite": "\(folder)/gateway.db" },
                      "trust": { "extra_roots": ["\(pki.folder)/root.der"] },
                      "app_store_api": { "production_url": "http://127.0.0.1:\(api.port)", "sandbox_url": "http://127.0.0.1:\(api.port)",
                                         "issuer_id": "\(SimulatorPKI.issuerID)", "key_id": "\(SimulatorPKI.apiKeyID)", "private_key_env": "SIM_API_KEY",
                                         "rate_limits": { "per_second": { "transaction_history": \(transactionHistoryPerSecond) } } },
                      "apps": [ { "bundle_id": "\(ReceiptPrefetchEndToEndTests.bundle)", "environments": ["sandbox"],
                                  "shared_secret_env": ["SIM_SECRET"], "authority": "v2", "receipts": "shadow" } ],
                      "reconcile": { "every": "off", "history_sweep": "off" }
                    }
                """
            }
            defer { _ = gateway.terminate() }
            for name in Lifecycles.all.prefix(lifecycles).map(\.name) {
                let options = Simulation.LifecycleOptions(
                    name: name,
                    to: "http://127.0.0.1:\(port)/notifications",
                    pkiFolder: pki.folder,
                    bundleID: ReceiptPrefetchEndToEndTests.bundle,
                    sharedSecret: SimulatorLifecycleTests.secret
                )
                let seen = Mutex<Set<String>>([])
                let run = try await Simulation.lifecycle(
                    options,
                    transport: CurlTransport(),
                    now: { WallClock.wallMillis() },
                    sleep: { _ in },
                    output: { _ in },
                    afterStep: { emission in _ = seen.withLock { $0.insert(emission.originalTransactionID) } }
                )
                #expect(run.ok, "\(name): every notification accepted")
                customers.formUnion(seen.withLock { $0 })
            }
        }

        var arguments: [String] {
            [
                "receipts", "prefetch", "--config", folder + "/gateway.json", "--bundle",
                ReceiptPrefetchEndToEndTests.bundle,
                "--environment", "sandbox", "--share", "1",
            ]
        }

        func stop() {
            api.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    static func lines(_ stdout: String) throws -> [JSONObject] {
        try stdout.split(separator: "\n").map { line in
            try #require(try JSONParser.parse(Array(line.utf8)).objectValue)
        }
    }

    /// Every customer journaled is fetched once, at the end the line says so and where it is; a second run finds them
    /// all fresh and asks Apple nothing.
    @Test func everyJournaledCustomerIsFetchedOnceThenFoundFresh() async throws {
        let rig = try await Rig(lifecycles: 3)
        defer { rig.stop() }
        #expect(rig.customers.count >= 3)
        let first = try ReceiptPathEndToEndTests.command(rig.arguments, environment: rig.environment)
        #expect(first.status == 0, "\(first.stderr)")
        ContractSamples.recordLines("receipts-prefetch", Array(first.stdout.utf8))
        let last = try #require(try Self.lines(first.stdout).last)
        #expect(last["state"] == .string("complete"))
        #expect(last["total"] == .number(String(rig.customers.count)))
        #expect(last["fetched"] == .number(String(rig.customers.count)) && last["failed"] == .number("0"))
        #expect(last["after"] == .string(rig.customers.max() ?? ""))
        let calls = rig.historyCalls.value
        #expect(calls >= rig.customers.count && last["history_calls"] == .number(String(calls)))
        let second = try ReceiptPathEndToEndTests.command(rig.arguments, environment: rig.environment)
        #expect(second.status == 0, "\(second.stderr)")
        let again = try #require(try Self.lines(second.stdout).last)
        #expect(again["skipped"] == .number(String(rig.customers.count)) && again["calls"] == .number("0"))
        #expect(rig.historyCalls.value == calls)
    }

    /// SIGINT while the budget holds the next call back: the run stops, prints its last line (state `stopped`, the
    /// resume point) and exits 1.
    @Test func aSignalStopsTheRunWithItsResumePoint() async throws {
        // The sandbox's budget: 0.1 × 0.8 calls a second, one at once: the second customer waits some 12 s.
        let rig = try await Rig(lifecycles: 2, transactionHistoryPerSecond: 1)
        defer { rig.stop() }
        let child = try ChildProcess(
            executable: MultiInstanceProcessTests.binary,
            arguments: rig.arguments,
            environment: rig.environment
        )
        await eventually("the first customer is asked about") { rig.historyCalls.value >= 1 }
        let status = child.terminate(signal: SIGINT)
        #expect(status == 1)
        let output = child.keptLines.joined(separator: "\n")
        ContractSamples.recordLines("receipts-prefetch", Array(output.utf8))
        let last = try #require(try Self.lines(output).last)
        #expect(last["state"] == .string("stopped"))
        let done = try #require(last["done"]?.int64Value)
        #expect(done < Int64(rig.customers.count))
        #expect(rig.historyCalls.value <= 2)
    }

    @Test func usageErrorsExit2AndHelpExits0() throws {
        let help = try ReceiptPathEndToEndTests.command(["receipts", "prefetch", "--help"], environment: [:])
        #expect(help.status == 0 && help.stdout.contains("iap-gateway receipts prefetch --config FILE --bundle B"))
        for arguments in [
            ["receipts"], ["receipts", "fetch"], ["receipts", "prefetch", "--config", "/nonexistent.json"],
            ["receipts", "prefetch", "--bundle", "b", "--share", "2", "--config", "x"],
            ["receipts", "prefetch", "--bundle", "b", "--limit", "0", "--config", "x"],
            ["receipts", "prefetch", "--bundle", "b", "--nope", "1"],
        ] {
            let run = try ReceiptPathEndToEndTests.command(arguments, environment: [:])
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
        }
    }
}
