import Canonical
import Crypto
import Foundation
import Gateway
import GatewayCLI
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// `iap-gateway backfill` against an App Store Server API that answers as a test scripts it (docs/operations.md,
/// "Reconciliation"): a run reads Apple's history page by page within its caps, says where to resume, and never stops
/// on a notification it cannot serve.
@Suite struct BackfillCommandTests {
    static let bundleID = "com.example.gateway"
    /// The test PKI's dates (its certificates are valid then).
    static let t: Int64 = 1_748_736_000_000
    static let since = t - 86_400_000

    /// A gateway (not listening) over a scratch SQLite store, trusting the test PKI like Apple, with one sandbox app,
    /// and an App Store Server API client whose every request `answer` scripts by page index (0 for the first request
    /// of a listing, n for `paginationToken=pn`).
    final class Rig {
        let directory: String
        let service: GatewayService
        let transport: ScriptedTransport
        let source: AppStoreAPIClients

        init(limits: String = "{}", answer: @escaping @Sendable (Int) -> String) throws {
            directory = try Scratch.directory()
            let json = """
                { "store": { "sqlite": "gateway.db" }, "limits": \(limits),
                  "apps": [ { "bundle_id": "\(BackfillCommandTests.bundleID)", "environments": ["sandbox"], "authority": "v2" } ] }
                """
            let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
            var dependencies = GatewayService.Dependencies(
                environment: [:],
                transport: CurlTransport(),
                now: { BackfillCommandTests.t + 3_600_000 },
                jitter: { 0 },
                logSink: { _ in }
            )
            dependencies.trustAnchors = try TrustAnchors(appleRoots: [
                TrustAnchors.appleRootCAG3, try TestPKI.der("root"),
            ])
            service = try GatewayService(config: config, dependencies: dependencies)
            try service.seedAuthority()
            transport = ScriptedTransport { request throws(HTTPClientError) in
                let token = request.url.split(separator: "paginationToken=").dropFirst().first.map(String.init)
                let index = token.flatMap { Int($0.dropFirst()) } ?? 0
                return HTTPResponse(status: 200, body: Array(answer(index).utf8))
            }
            let configuration = AppStoreAPIClient.Configuration(
                keyID: "KEY",
                issuerID: "ISSUER",
                bundleID: BackfillCommandTests.bundleID,
                privateKey: try PrivateKey.generateP256(),
                maxAttempts: 1,
                maxPages: 5
            )
            let client = AppStoreAPIClient(
                configuration: configuration,
                transport: transport,
                adapter: service.ingest.v2,
                now: { BackfillCommandTests.t + 3_600_000 },
                sleep: { _ in },
                jitter: { 0 }
            )
            source = AppStoreAPIClients(clients: [BackfillCommandTests.bundleID: client])
        }

        var store: any GatewayStore { service.store }

        func quarantined() throws -> [QuarantineRecord] {
            try store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 100) }
        }

        func close() async {
            await service.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A TEST notification for `bundle` in the sandbox, signed by the test PKI's leaf.
    static func signed(_ n: Int, bundle: String = bundleID) throws -> String {
        let digits = String(n)
        let uuid = "00000000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits
        let payload = #"""
            {"notificationType":"TEST","notificationUUID":"\#(uuid)","data":{"bundleId":"\#(bundle)","environment":"Sandbox"},\#
            "version":"2.0","signedDate":\#(t)}
            """#
        return String(
            decoding: try TestJWS.sign(
                headerJSON: try TestJWS.standardHeader(),
                payloadJSON: payload,
                key: try TestPKI.key("leaf")
            ),
            as: UTF8.self
        )
    }

    /// A page of Get Notification History holding `payloads`, padded (with a member Apple's model does not have) to
    /// about `size` bytes; `more`: followed by page `index + 1`.
    static func page(_ payloads: [String], index: Int, more: Bool, size: Int = 0) -> String {
        let items = payloads.map { #"{"signedPayload":"\#($0)","sendAttempts":[]}"# }.joined(separator: ",")
        let token = more ? #","paginationToken":"p\#(index + 1)""# : ""
        let padding = String(repeating: "x", count: max(0, size - items.utf8.count))
        return #"{"notificationHistory":[\#(items)],"hasMore":\#(more)\#(token),"padding":"\#(padding)"}"#
    }

    /// Apple's history that never ends: page n holds notification n + 1 and is about 1 MiB.
    static func endlessHistory() throws -> @Sendable (Int) -> String {
        let notifications = try (1...12).map { try Self.signed($0) }
        return { index in
            Self.page([notifications[min(index, notifications.count - 1)]], index: index, more: true, size: 1 << 20)
        }
    }

    @Test func aHistoryThatNeverEndsIsReadPageByPageUntilThePageCapAndResumedFromItsToken() async throws {
        let endless = try Self.endlessHistory()
        let journaledBefore = Mutex<[Int]>([])
        let box = Mutex<(any GatewayStore)?>(nil)
        let rig = try Rig { index in
            // Each page is asked for only once the one before it went through the pipeline.
            let journaled =
                box.withLock { $0 }.flatMap { store in try? store.read { tx in try tx.counts() }.journal } ?? -1
            journaledBefore.withLock { $0.append(journaled) }
            return endless(index)
        }
        box.withLock { $0 = rig.store }
        var limits = BackfillCommand.Limits()
        limits.maxPages = 3
        let results = try await BackfillCommand.backfill(
            service: rig.service,
            source: rig.source,
            since: Self.since,
            until: Self.t,
            bundleID: nil,
            environment: nil,
            limits: limits
        )
        for result in results { ContractSamples.record("backfill", JSONOutput.encode(result)) }
        #expect(rig.transport.requests.count == 3)
        #expect(journaledBefore.withLock { $0 } == [0, 1, 2])
        let first = try #require(results.first)
        #expect(results.count == 1)
        #expect(first.listed == 3 && first.added == 3 && first.pages == 3)
        #expect(!first.complete && first.stoppedBy == "max_pages" && first.resumeToken == "p3")
        #expect(first.since == Self.since && first.until == Self.t)

        // Resumed from its token: the pages after, not the first ones again.
        limits.maxPages = 2
        limits.resumeToken = first.resumeToken
        let resumed = try await BackfillCommand.backfill(
            service: rig.service,
            source: rig.source,
            since: Self.since,
            until: Self.t,
            bundleID: Self.bundleID,
            environment: .sandbox,
            limits: limits
        )
        for result in resumed { ContractSamples.record("backfill", JSONOutput.encode(result)) }
        #expect(rig.transport.requests.dropFirst(3).map { $0.url.hasSuffix("?paginationToken=p3") } == [true, false])
        #expect(resumed.map(\.added) == [2] && resumed.map(\.resumeToken) == ["p5"])
        #expect(try rig.store.journal().count == 5)
        await rig.close()
    }

    @Test func theByteCapEndsTheRunAfterThePageThatReachesIt() async throws {
        let rig = try Rig(answer: try Self.endlessHistory())
        var limits = BackfillCommand.Limits()
        limits.maxBytes = 5 << 19  // 2.5 MiB: three pages of about 1 MiB
        let results = try await BackfillCommand.backfill(
            service: rig.service,
            source: rig.source,
            since: Self.since,
            until: Self.t,
            bundleID: nil,
            environment: nil,
            limits: limits
        )
        for result in results { ContractSamples.record("backfill", JSONOutput.encode(result)) }
        #expect(rig.transport.requests.count == 3)
        #expect(
            results.map(\.stoppedBy) == ["max_bytes"] && results.map(\.resumeToken) == ["p3"]
                && results.map(\.complete) == [false]
        )
        #expect(results.allSatisfy { $0.bytes >= 3 << 20 && $0.bytes < 4 << 20 })
        await rig.close()
    }

    @Test func aNotificationForABundleTheConfigDoesNotServeIsCountedAndQuarantinedOnceWhileTheRestIsRecovered()
        async throws
    {
        let items = [try Self.signed(1), try Self.signed(99, bundle: "com.example.unconfigured"), try Self.signed(2)]
        let next = [try Self.signed(3)]
        let rig = try Rig { index in Self.page(index == 0 ? items : next, index: index, more: index == 0) }
        for _ in 0..<2 {
            let results = try await BackfillCommand.backfill(
                service: rig.service,
                source: rig.source,
                since: Self.since,
                until: Self.t,
                bundleID: nil,
                environment: nil
            )
            for result in results { ContractSamples.record("backfill", JSONOutput.encode(result)) }
            #expect(results.map(\.refused) == [["unknown_bundle": 1]])
            #expect(results.map(\.listed) == [4])
        }
        #expect(Set(try rig.store.journal().map(\.key)).count == 3)
        let rows = try rig.quarantined()
        #expect(rows.count == 1 && rows.first?.lane == .genuine && rows.first?.bundleID == "com.example.unconfigured")
        await rig.close()
    }

    @Test func aGenuineLaneTooFullToHoldANotificationStopsTheBackfillWhereItCanResume() async throws {
        let items = [
            try Self.signed(91, bundle: "com.example.unconfigured"),
            try Self.signed(92, bundle: "com.example.unconfigured"), try Self.signed(1),
        ]
        let second = [try Self.signed(2)]
        let rig = try Rig(limits: #"{"genuine_quarantine": 1}"#) { index in
            index == 0 ? Self.page(second, index: 0, more: true) : Self.page(items, index: index, more: false)
        }
        let results = try await BackfillCommand.backfill(
            service: rig.service,
            source: rig.source,
            since: Self.since,
            until: Self.t,
            bundleID: nil,
            environment: nil
        )
        for result in results { ContractSamples.record("backfill", JSONOutput.encode(result)) }
        // The second page's second item could not be kept: the run stops there, to fetch that page again next time.
        #expect(
            results.map(\.stoppedBy) == ["unknown_bundle"] && results.map(\.resumeToken) == ["p1"]
                && results.map(\.complete) == [false]
        )
        #expect(try rig.store.journal().count == 1)
        #expect(try rig.quarantined().count == 1)
        await rig.close()
    }
}
