import Canonical
import FoundationEssentials
import Gateway
import GatewayCLI
import HTTPClient
import Store
import TestSupport
import Testing
import V1Adapter
import V2Adapter
import WireJSON

/// Every fixture body through `iap-gateway verify`'s code path, compared with the golden file beside it.
/// Set IAPGW_UPDATE_GOLDENS=1 to rewrite the goldens (then review the diff by hand).
@Suite struct VerifyGoldenTests {
    static let now: @Sendable () -> Int64 = { TestPKI.now }

    /// The real Apple G3 root, no app policy: what `iap-gateway verify FILE` does without a config.
    static func appleCommand() throws -> VerifyCommand {
        VerifyCommand(v2: V2Adapter(verifier: AppleJWSVerifier(anchors: try TrustAnchors.apple()), apps: nil), now: now)
    }

    /// The test root pinned as if it were Apple's, and the two test apps: the synthetic fixtures' setup.
    static func syntheticCommand() throws -> VerifyCommand {
        VerifyCommand(
            v2: V2Adapter(verifier: AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple()), apps: TestPKI.apps),
            now: now
        )
    }

    static func report(_ command: VerifyCommand, _ path: String) async throws -> [UInt8] {
        JSONOutput.encode(await command.verify(try Fixtures.bytes(path)), pretty: true)
    }

    static func compareOrUpdate(_ command: VerifyCommand, folder: String, name: String) async throws {
        let actual = try await report(command, "\(folder)/\(name)")
        let goldenPath = "\(folder)/\(Fixtures.goldenName(name))"
        if Fixtures.updatingGoldens {
            try Fixtures.writeGolden(goldenPath, actual)
            return
        }
        let expected = try Fixtures.bytes(goldenPath)
        #expect(
            String(decoding: actual + [0x0A], as: UTF8.self) == String(decoding: expected, as: UTF8.self),
            "\(name)"
        )
    }

    @Test(arguments: Fixtures.names(in: "v2"))
    func realAppleSampleVerifiesAndMatchesGolden(_ name: String) async throws {
        let command = try Self.appleCommand()
        let report = await command.verify(try Fixtures.bytes("v2/\(name)"))
        #expect(report.ok, "\(name): \(String(describing: report.error))")
        try await Self.compareOrUpdate(command, folder: "v2", name: name)
    }

    @Test(arguments: Fixtures.names(in: "v2-synthetic"))
    func syntheticNotificationVerifiesAndMatchesGolden(_ name: String) async throws {
        let command = try Self.syntheticCommand()
        let report = await command.verify(try Fixtures.bytes("v2-synthetic/\(name)"))
        #expect(report.ok, "\(name): \(String(describing: report.error))")
        try await Self.compareOrUpdate(command, folder: "v2-synthetic", name: name)
    }

    /// A command that accepts `name`'s V1 body with the (placeholder) password it carries, offline.
    static func v1Command(for name: String) throws -> VerifyCommand {
        let body = try Fixtures.jsonStrings("v1/\(name)")
        var apps: [V1App] = []
        if let bundle = V1Adapter.claimedBundle(body: try Fixtures.bytes("v1/\(name)")), let password = body["password"]
        {
            apps = [
                V1App(
                    bundleID: bundle,
                    environments: [.production, .sandbox],
                    sharedSecrets: [SharedSecret(name: "FIXTURE_SHARED_SECRET", value: password)],
                    verifyReceipt: false
                )
            ]
        }
        return VerifyCommand(
            v2: V2Adapter(verifier: AppleJWSVerifier(anchors: try TrustAnchors.apple()), apps: nil),
            v1Apps: apps,
            now: now
        )
    }

    @Test(arguments: Fixtures.names(in: "v1"))
    func realV1BodyNormalizesAndMatchesGolden(_ name: String) async throws {
        let command = try Self.v1Command(for: name)
        let report = await command.verify(try Fixtures.bytes("v1/\(name)"))
        #expect(report.ok, "\(name): \(String(describing: report.error))")
        if name.hasPrefix("v1-notif-") {
            #expect(
                report.events?.count == 1 && report.events?.first?.verified == false
                    && report.events?.first?.source == .v1
            )
            #expect(report.eventID?.hasPrefix("v1:") == true)
        }
        try await Self.compareOrUpdate(command, folder: "v1", name: name)
    }

    @Test(arguments: Fixtures.names(in: "v2-negative"))
    func realNegativeIsRejectedWithItsCode(_ name: String) async throws {
        try await Self.expectRejection(try Self.appleCommand(), folder: "v2-negative", name: name)
    }

    @Test(arguments: Fixtures.names(in: "v2-synthetic/negative"))
    func syntheticNegativeIsRejectedWithItsCode(_ name: String) async throws {
        try await Self.expectRejection(try Self.syntheticCommand(), folder: "v2-synthetic/negative", name: name)
    }

    static func expectRejection(_ command: VerifyCommand, folder: String, name: String) async throws {
        let report = await command.verify(try Fixtures.bytes("\(folder)/\(name)"))
        let expected = try JSONDecoder().decode(
            Expected.self,
            from: Data(try Fixtures.bytes("\(folder)/\(Fixtures.goldenName(name))"))
        )
        #expect(!report.ok, "\(name) was accepted")
        #expect(report.error?.code == expected.error.code, "\(name): \(report.error?.message ?? "")")
        #expect(report.error?.cause == expected.error.cause, "\(name): \(report.error?.message ?? "")")
        // The message is for humans, but it must never quote the token.
        #expect(!(report.error?.message.contains("eyJ") ?? false))
    }

    struct Expected: Decodable {
        struct Body: Decodable {
            var code: String
            var cause: String?
        }
        var ok: Bool
        var error: Body
    }

    @Test func everyV2NotificationTypeIsCoveredBySyntheticFixtures() async throws {
        let command = try Self.syntheticCommand()
        var seen: Set<String> = []
        for name in Fixtures.names(in: "v2-synthetic") {
            for event in await command.verify(try Fixtures.bytes("v2-synthetic/\(name)")).events ?? [] {
                seen.insert(event.rawType)
            }
        }
        let apple: Set<String> = [
            "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW",
            "EXPIRED",
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED",
            "CONSUMPTION_REQUEST",
            "RENEWAL_EXTENDED", "REVOKE", "TEST", "RENEWAL_EXTENSION", "REFUND_REVERSED", "EXTERNAL_PURCHASE_TOKEN",
            "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
        ]
        #expect(apple.subtracting(seen).isEmpty, "no fixture for \(apple.subtracting(seen).sorted())")
    }
}

/// The 13 synthetic V1 bodies through `verify --verify-receipt` against a fake Apple verifyReceipt on 127.0.0.1
/// that answers each body's receipt with the fixture's `.receipt.json`: events built from Apple's answer
/// (`verified: true`), compared with the goldens.
@Suite struct V1VerifyReceiptGoldenTests {
    static let secret = SharedSecret(name: "APP_SHARED_SECRET", value: "0123456789abcdef0123456789abcdef")

    static var names: [String] { Fixtures.names(in: "v1-synthetic").filter { !$0.hasSuffix(".receipt.json") } }

    @Test(arguments: names)
    func eventsComeFromApplesAnswer(_ name: String) async throws {
        let answer = try Fixtures.bytes("v1-synthetic/\(String(name.dropLast(5))).receipt.json")
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: answer) }
        let client = VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(
                productionURL: apple.url("/verifyReceipt"),
                sandboxURL: apple.url("/sandbox/verifyReceipt")
            ),
            sleep: { _ in },
            jitter: { 0 }
        )
        let app = V1App(
            bundleID: "com.example.gateway",
            environments: [.production, .sandbox],
            sharedSecrets: [Self.secret]
        )
        let command = VerifyCommand(
            v2: V2Adapter(verifier: AppleJWSVerifier(anchors: try TrustAnchors.apple()), apps: nil),
            v1Apps: [app],
            receiptClient: client,
            now: { 1_748_739_600_000 }
        )
        let report = await command.verify(try Fixtures.bytes("v1-synthetic/\(name)"))
        #expect(report.ok, "\(name): \(String(describing: report.error))")
        #expect(report.events?.first?.verified == true)
        #expect(report.appleStatus == 0)
        #expect(apple.requests.count == 1)
        #expect(
            String(decoding: apple.requests[0].body, as: UTF8.self).contains(
                "\"receipt-data\":\"c3ludGhldGljLXJlY2VpcHQtZm9yLXRlc3Rz\""
            )
        )
        let actual = JSONOutput.encode(report, pretty: true)
        let goldenPath = "v1-synthetic/\(Fixtures.goldenName(name))"
        if Fixtures.updatingGoldens {
            try Fixtures.writeGolden(goldenPath, actual)
        } else {
            #expect(
                String(decoding: actual + [0x0A], as: UTF8.self)
                    == String(decoding: try Fixtures.bytes(goldenPath), as: UTF8.self)
            )
        }
    }

    @Test func aReceiptThatDoesNotDescribeTheSubscriptionIsInvalid() async throws {
        // Apple answers with another subscription's data: the body's original_transaction_id is the cross-check.
        let answer = try Fixtures.bytes("v1-synthetic/did-recover.receipt.json")
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: answer) }
        let client = VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(
                productionURL: apple.url("/verifyReceipt"),
                sandboxURL: apple.url("/sandbox/verifyReceipt")
            ),
            sleep: { _ in },
            jitter: { 0 }
        )
        let app = V1App(bundleID: "com.example.gateway", environments: [.production], sharedSecrets: [Self.secret])
        let command = VerifyCommand(
            v2: V2Adapter(verifier: AppleJWSVerifier(anchors: try TrustAnchors.apple()), apps: nil),
            v1Apps: [app],
            receiptClient: client,
            now: { 1_748_739_600_000 }
        )
        let report = await command.verify(try Fixtures.bytes("v1-synthetic/did-renew.json"))
        #expect(report.error?.code == "receipt_invalid")
    }
}
