import Canonical
import Foundation
import Gateway
import HTTPClient
import HTTPServer
import ServiceKit
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Store
import TestSupport
import Testing
import WireJSON

@testable import Benchmarks

#if canImport(Glibc)
import Glibc
#endif

/// The receipt path with real processes: the built `iap-gateway serve` answering `POST /sandbox/verifyReceipt`, the
/// simulated App Store in this process issuing real receipts (signed by its receipt chain) and answering both Apple's
/// verifyReceipt and the App Store Server API from the same state. Every wait is for a condition. Histories are not
/// kept (`receipts.history_max_age` 0s): the simulator dates its steps in the past as fast as it plays them, which no
/// history fetched now can be laid under; the laying over is ReceiptEndpointTests'.
@Suite(.serialized) struct ReceiptPathEndToEndTests {
    static let bundle = SimulatorLifecycleTests.bundleID
    static let secret = SimulatorLifecycleTests.secret

    struct FixtureError: Error, CustomStringConvertible { var description: String }

    /// The gateway as a process; the fake Apple in this one, its verifyReceipt and its App Store Server API on two
    /// listeners (so that verifyReceipt alone can be taken away).
    final class Rig: @unchecked Sendable {
        let folder: String
        let pki: SimulatorPKI
        let fake: FakeAppleServer
        let verifyReceipt: HTTPServer
        let api: HTTPServer
        let port: UInt16
        let adminPort: UInt16
        let gateway: ChildProcess
        let environment: [String: String]

        init(mode: ReceiptMode) throws {
            folder = try Scratch.directory()
            pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            fake = try FakeAppleServer(
                pki: pki.folder,
                notifyURL: nil,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() }
            )
            verifyReceipt = HTTPServer(configuration: .init(), handler: fake.handle)
            try verifyReceipt.start()
            api = HTTPServer(configuration: .init(), handler: fake.handle)
            try api.start()
            environment = [
                "SIM_SECRET": ReceiptPathEndToEndTests.secret, "SIM_API_KEY": pki.apiKeyPEM,
                "ADMIN_TOKEN": "receipt-path-admin-token-0123456789", "PATH": "/usr/bin:/bin",
            ]
            let (verifyReceipt, api, pki) = (verifyReceipt, api, pki)
            (gateway, port, adminPort) = try MigrationEndToEndTests.startServe(folder: folder, environment: environment)
            {
                port,
                adminPort in
                """
                    {
                      "listen": "127.0.0.1:\(port)",
                      "admin": { "listen": "127.0.0.1:\(adminPort)", "token_env": "ADMIN_TOKEN" },
                      "store": { "sqlite": "gateway.db" },
                      "trust": { "extra_roots": ["\(pki.folder)/root.der"], "extra_receipt_roots": ["\(pki.folder)/receipt-root.der"] },
                      "verify_receipt": { "production_url": "http://127.0.0.1:\(verifyReceipt.port)/verifyReceipt",
                                          "sandbox_url": "http://127.0.0.1:\(verifyReceipt.port)/sandbox/verifyReceipt" },
                      "app_store_api": { "production_url": "http://127.0.0.1:\(api.port)", "sandbox_url": "http://127.0.0.1:\(api.port)",
                                         "issuer_id": "\(SimulatorPKI.issuerID)", "key_id": "\(SimulatorPKI.apiKeyID)", "private_key_env": "SIM_API_KEY" },
                      "apps": [ { "bundle_id": "\(ReceiptPathEndToEndTests.bundle)", "environments": ["sandbox"],
                                  "shared_secret_env": ["SIM_SECRET"], "authority": "v2", "receipts": "\(mode.rawValue)" } ],
                      "compare": { "min_pairs": 3 },
                      "receipts": { "history_max_age": "0s" },
                      "reconcile": { "every": "off", "history_sweep": "off" },
                      "limits": { "http_threads": 8 }
                    }
                """
            }
        }

        /// A verifyReceipt request with the app's secret: the answer of `base` (`…/sandbox/verifyReceipt`).
        func ask(_ receipt: String, at url: String) async throws -> JSONObject {
            var w = JSONObjectWriter()
            w.string("receipt-data", receipt)
            w.string("password", ReceiptPathEndToEndTests.secret)
            let response = try await CurlTransport().send(
                HTTPRequest(method: .post, url: url, body: w.finish(), timeoutMillis: 30_000)
            )
            guard response.status == 200, let o = try JSONParser.parse(response.body).objectValue else {
                throw FixtureError(description: "HTTP \(response.status) from \(url)")
            }
            return o
        }

        var gatewayURL: String { "http://127.0.0.1:\(port)/sandbox/verifyReceipt" }
        var appleURL: String { "http://127.0.0.1:\(verifyReceipt.port)/sandbox/verifyReceipt" }

        /// Plays a lifecycle as V2 traffic into the gateway; `afterStep` gets each step's subscription.
        func play(_ name: String, afterStep: @escaping (String) async throws -> Void) async throws {
            try await play(name, version: .v2) { try await afterStep($0.originalTransactionID) }
        }

        /// Plays a lifecycle as `version` traffic into the gateway; `afterStep` gets each step as it was sent.
        func play(
            _ name: String,
            version: Simulation.LifecycleOptions.Version,
            afterStep: @escaping (Emission) async throws -> Void
        ) async throws {
            var options = Simulation.LifecycleOptions(
                name: name,
                to: "http://127.0.0.1:\(port)/notifications",
                pkiFolder: pki.folder,
                bundleID: ReceiptPathEndToEndTests.bundle,
                sharedSecret: ReceiptPathEndToEndTests.secret
            )
            options.version = version
            let run = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() },
                sleep: { _ in },
                output: { _ in },
                afterStep: afterStep
            )
            #expect(run.ok, "\(name): every notification accepted")
        }

        func stop() {
            gateway.terminate()
            verifyReceipt.stop()
            api.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// A command of the built binary, run to its end.
    static func command(
        _ arguments: [String],
        environment: [String: String]
    ) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let process = Process()
        process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
        process.arguments = arguments
        process.environment = environment
        let (out, err) = (Pipe(), Pipe())
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self)
        )
    }

    /// What the old backend reads of an answer: per transaction its id, product, expiry, trial and cancellation;
    /// per subscription its renewal facts.
    static func facts(_ answer: JSONObject) -> (transactions: [String: String], renewals: [String: String]) {
        func line(_ o: JSONObject, _ keys: [String]) -> String {
            keys.map { "\($0)=\(o[$0]?.stringValue ?? "-")" }.joined(separator: " ")
        }
        var transactions: [String: String] = [:]
        for case .object(let t) in answer["latest_receipt_info"]?.arrayValue ?? [] {
            transactions[t["transaction_id"]?.stringValue ?? "?"] = line(
                t,
                ["original_transaction_id", "product_id", "expires_date_ms", "is_trial_period", "cancellation_date_ms"]
            )
        }
        var renewals: [String: String] = [:]
        for case .object(let r) in answer["pending_renewal_info"]?.arrayValue ?? [] {
            renewals[r["original_transaction_id"]?.stringValue ?? "?"] = line(
                r,
                ["auto_renew_status", "auto_renew_product_id", "is_in_billing_retry_period", "expiration_intent"]
            )
        }
        return (transactions, renewals)
    }

    @Test func everyStepsReceiptIsAnsweredAsApplesVerifyReceiptAnswersIt() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.stop() }
        var (compared, problems) = (0, [String]())
        for lifecycle in Lifecycles.all.map(\.name) {
            try await rig.play(lifecycle) { otid in
                let receipt = try rig.fake.receipt(originalTransactionID: otid)
                let apple = try await rig.ask(receipt, at: rig.appleURL)
                let ours = try await rig.ask(receipt, at: rig.gatewayURL)
                compared += 1
                guard ours["status"] == .number("0"), apple["status"] == .number("0") else {
                    problems.append("\(lifecycle) \(otid): status \(String(describing: ours["status"])) vs Apple's")
                    return
                }
                let (a, b) = (Self.facts(apple), Self.facts(ours))
                if a.transactions != b.transactions {
                    problems.append(
                        "\(lifecycle) \(otid): latest_receipt_info \(b.transactions) vs Apple's \(a.transactions)"
                    )
                }
                if a.renewals != b.renewals {
                    problems.append("\(lifecycle) \(otid): pending_renewal_info \(b.renewals) vs Apple's \(a.renewals)")
                }
            }
        }
        #expect(compared > 50, "\(compared) receipts compared")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        print("receipt path e2e: \(compared) step receipts, \(problems.count) disagreements")
    }

    /// A V1 notification's `unified_receipt.latest_receipt` is the customer's app receipt as of the notification,
    /// which a V1-era backend keeps and sends to verifyReceipt later: re-sent to the gateway it reads and
    /// authenticates (under `trust.extra_receipt_roots`), in `shadow` (Apple's answer, compared) and in `api` (the
    /// gateway's own), as it does at Apple's.
    @Test(arguments: [ReceiptMode.shadow, .api])
    func aV1NotificationsReceiptIsReadAndAuthenticatedByTheGateway(mode: ReceiptMode) async throws {
        let rig = try Rig(mode: mode)
        defer { rig.stop() }
        let store = try SQLiteStore(path: rig.folder + "/gateway.db")
        defer { store.close() }
        func compared() throws -> Int {
            try store.read { tx in
                try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: .max)
            }.count
        }
        var (asked, problems) = (0, [String]())
        for lifecycle in ["auto-renew", "billing-grace-recovery", "refund", "upgrade"] {
            try await rig.play(lifecycle, version: .v1) { e in
                for body in e.v1Bodies {
                    let receipt = try #require(body.unifiedReceipt?.latestReceipt)
                    let held = e.subscription.transactions.filter { $0.purchaseDate <= e.at }.count
                    let before = try compared()
                    let apple = try await rig.ask(receipt, at: rig.appleURL)
                    let ours = try await rig.ask(receipt, at: rig.gatewayURL)
                    asked += 1
                    let inApp = ours["receipt"]?.objectValue?["in_app"]?.arrayValue?.count
                    if apple["status"] != .number("0") || ours["status"] != .number("0") || inApp != held {
                        problems.append(
                            "\(lifecycle) '\(e.step)' \(body.notificationType ?? "?"): status \(String(describing: ours["status"])), "
                                + "Apple's \(String(describing: apple["status"])), in_app \(String(describing: inApp)) of \(held)"
                        )
                    }
                    if mode == .shadow {
                        let recorded = try await eventually("the shadow comparison") { try compared() > before }
                        #expect(recorded)
                    }
                }
            }
        }
        #expect(asked >= 8, "\(asked) V1 receipts asked about")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        if mode == .shadow {
            let rows = try await store.read { tx in
                try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: .max)
            }
            #expect(rows.allSatisfy { $0.outcome == .agree }, "\(rows.filter { $0.outcome != .agree })")
        }
    }

    @Test func shadowAgreesThenTheCutoverAnswersWithoutApplesVerifyReceipt() async throws {
        let rig = try Rig(mode: .shadow)
        defer { rig.stop() }
        var lastReceipt = ""
        var asked = 0
        let store = try SQLiteStore(path: rig.folder + "/gateway.db")
        defer { store.close() }
        func compared() throws -> Int {
            try store.read { tx in
                try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: .max)
            }.count
        }
        for lifecycle in ["auto-renew", "billing-grace-recovery", "refund", "upgrade"] {
            try await rig.play(lifecycle) { otid in
                lastReceipt = try rig.fake.receipt(originalTransactionID: otid)
                let before = try compared()
                let answer = try await rig.ask(lastReceipt, at: rig.gatewayURL)
                #expect(answer["status"] == .number("0"), "Apple's answer, returned")
                asked += 1
                // The comparison is made after the answer: the next step waits for it (the subscription would
                // otherwise change between Apple's answer and the gateway's).
                let recorded = try await eventually("the shadow comparison of this answer") { try compared() > before }
                #expect(recorded)
            }
        }
        // Every comparison is in the receipt ledger; the report's receipt section agrees fully.
        let rows = try await store.read { tx in
            try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: .max)
        }
        #expect(rows.allSatisfy { $0.outcome == .agree }, "\(rows.filter { $0.outcome != .agree })")
        let report = try Self.command(
            ["report", "--config", rig.folder + "/gateway.json", "--format", "json"],
            environment: rig.environment
        )
        let bundles = try #require(try JSONParser.parse(Array(report.stdout.utf8)).objectValue?["bundles"]?.arrayValue)
        let receipts = try #require(bundles.first?.objectValue?["receipts"]?.objectValue)
        #expect(receipts["verdict"] == .string("ready") && receipts["agreement_rate"] == .number("1"), "\(receipts)")

        // The cutover: the gateway answers alone, and Apple's verifyReceipt can go away.
        let cutover = try Self.command(
            [
                "cutover", "--config", rig.folder + "/gateway.json", Self.bundle, "--environment", "sandbox",
                "--receipts", "api",
            ],
            environment: rig.environment
        )
        #expect(cutover.status == 0, "\(cutover.stderr)")
        // Logged as the admin API logs it, on standard error; the record on standard output.
        #expect(cutover.stderr.contains(#""msg":"receipt mode changed""#) && cutover.stderr.contains(#""to":"api""#))
        #expect(try JSONParser.parse(Array(cutover.stdout.utf8)).objectValue?["to"] == .string("api"))
        rig.verifyReceipt.stop()
        let answer = try await rig.ask(lastReceipt, at: rig.gatewayURL)
        #expect(answer["status"] == .number("0"))
        #expect(answer["latest_receipt_info"]?.arrayValue?.isEmpty == false)
        print(
            "receipt path e2e: shadow \(rows.count) subscriptions compared over \(asked) answers, then api without Apple"
        )
    }
}
