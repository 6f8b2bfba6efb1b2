import Canonical
import Crypto
import Foundation
import Gateway
import Store
import StoreTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter
import WireJSON

/// Quarantine lanes and replay under hostile input (docs/threat-model.md): what a refusal may store, and that a
/// replay never accepts what live traffic refused, records each row's outcome, and cannot be blocked by one row.
@Suite struct QuarantineReplayTests {
    /// A V2 body signed by the test PKI's leaf (a good signature) or another key (a bogus one).
    static func v2Body(payload: String, bogusSignature: Bool = false) throws -> [UInt8] {
        let key = try TestPKI.key(bogusSignature ? "other-leaf" : "leaf")
        let token = try TestJWS.sign(headerJSON: try TestJWS.standardHeader(), payloadJSON: payload, key: key)
        return InboundBody.v2(signedPayload: String(decoding: token, as: UTF8.self))
    }

    static func testPayload(bundle: String, signedDate: String, uuid: String) -> String {
        """
        {"notificationType":"TEST","notificationUUID":"\(uuid)","data":{"bundleId":"\(bundle)","environment":"Sandbox"},\
        "version":"2.0","signedDate":\(signedDate)}
        """
    }

    /// The harness's store with an ingest built from another config: the operator fixed the config, then replays.
    static func ingest(over h: GatewayHarness, configJSON: String, now: Int64) throws -> NotificationIngest {
        try h.restarted(configJSON: configJSON, now: now).ingest
    }

    static let fixedConfig = GatewayHarness.configJSON.replacingOccurrences(
        of: #"{ "bundle_id": "com.example.prodonly","#,
        with:
            #"{ "bundle_id": "com.example.late", "app_apple_id": 7, "environments": ["sandbox"] }, { "bundle_id": "com.example.prodonly","#
    )

    @Test func aRowWithAnExtremeSignedDateNeitherCrashesNorBlocksTheGenuineRowsBehindIt() throws {
        let now = GatewayHarness.t + 3_600_000
        let h = try GatewayHarness(now: now)
        defer { h.close() }
        // Refused live (its date is far outside the freshness window) and quarantined untrusted; a replay used to skip
        // freshness and trap in the verifier's time arithmetic, killing `serve`, with the row left to do it again.
        let poison = try Self.v2Body(
            payload: Self.testPayload(
                bundle: "com.example.gateway",
                signedDate: "-9223372036854775808",
                uuid: "poison"
            ),
            bogusSignature: true
        )
        #expect(h.ingest.handle(poison).status == 403)
        let genuine = try Self.v2Body(
            payload: Self.testPayload(
                bundle: "com.example.late",
                signedDate: String(GatewayHarness.t),
                uuid: "00000000-0000-4000-8000-00000000b0b0"
            )
        )
        let live = h.ingest.handle(genuine)
        #expect(live.status == 503 && live.code == "unknown_bundle" && live.quarantine == .stored(lane: .genuine))

        let fixed = try Self.ingest(over: h, configJSON: Self.fixedConfig, now: now + 3_600_000)
        let operations = Operations(store: h.store, now: { now + 3_600_000 })
        let results = try #require(try operations.quarantineReplay(ingest: fixed, secrets: []).arrayValue)
        #expect(results.count == 2)
        // The poison row is refused again, as live (no chain is valid at such a date); the genuine one is accepted.
        #expect(results.map { $0.objectValue?["code"] ?? .null } == [.string("certificate_expired"), .null])
        // The genuine row is journaled (as of its arrival) and left the quarantine; the poison row stays, with its outcome.
        #expect(
            try h.store.journal().filter { $0.key == "00000000-0000-4000-8000-00000000b0b0" && $0.receivedAt == now }
                .count == 1
        )
        let left = try h.store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 10) }
        #expect(left.count == 1)
        #expect(
            left.first?.lastReplayCode == "certificate_expired" && left.first?.replayAttempts == 1
                && left.first?.replayStartedAt == nil
        )
    }

    @Test func replayNeverAcceptsABackdatedForgeryThatLiveTrafficRefused() throws {
        // A notification signed 30 days before it arrived — what a leaked, since-expired leaf key would produce.
        let arrival = GatewayHarness.t + 30 * 86_400_000
        let h = try GatewayHarness(now: arrival)
        defer { h.close() }
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        let live = h.ingest.handle(body)
        #expect(live.status == 403 && live.code == "stale_notification" && live.quarantine == .stored(lane: .untrusted))
        // Replayed a month later still: judged as of its arrival, refused again, and not journaled or delivered.
        let operations = Operations(store: h.store, now: { arrival + 30 * 86_400_000 })
        let results = try #require(try operations.quarantineReplay(ingest: h.ingest, secrets: []).arrayValue)
        #expect(results.first?.objectValue?["code"] == .string("stale_notification"))
        #expect(try h.store.journal().count == 0)
        #expect(try h.store.deliveries().count == 0)
        #expect(try h.store.quarantined().count == 1)  // the same row, not a new one
    }

    @Test func aRowWhoseReplayNeverFinishedIsSkippedUntilAskedForById() throws {
        let now = GatewayHarness.t + 3_600_000
        let h = try GatewayHarness(now: now)
        defer { h.close() }
        let first = try Self.v2Body(
            payload: Self.testPayload(
                bundle: "com.example.late",
                signedDate: String(GatewayHarness.t),
                uuid: "00000000-0000-4000-8000-0000000000a1"
            )
        )
        let second = try Self.v2Body(
            payload: Self.testPayload(
                bundle: "com.example.late",
                signedDate: String(GatewayHarness.t),
                uuid: "00000000-0000-4000-8000-0000000000a2"
            )
        )
        #expect(h.ingest.handle(first).status == 503 && h.ingest.handle(second).status == 503)
        // A replay of the first row took its process down: the mark it set before running is still there.
        let oldest = try #require(try h.store.quarantined().first?.id)
        try h.store.write { tx in try tx.beginReplay(id: oldest, now: 1) }
        let fixed = try Self.ingest(over: h, configJSON: Self.fixedConfig, now: now)
        let operations = Operations(store: h.store, now: { now })
        let results = try #require(try operations.quarantineReplay(ingest: fixed, secrets: []).arrayValue)
        #expect(results.map { $0.objectValue?["code"] ?? .null } == [.string("replay_interrupted"), .null])
        #expect(try h.store.journal().count == 1)
        // Chosen by id, the operator replays it on purpose.
        let id = try #require(try h.store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 1) }.first?.id)
        let again = try #require(
            try operations.quarantineReplay(ingest: fixed, secrets: [], selection: .init(id: id)).arrayValue
        )
        #expect(again.first?.objectValue?["status"] == .number("200"))
        #expect(try h.store.quarantined().count == 0)
    }

    @Test func aV1BodyForAnUnconfiguredBundleIsRetriedButNeverEntersTheGenuineLane() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let claimed = String(repeating: "x", count: 100_000)
        let body = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"bid\": \"com.example.gateway\"", with: "\"bid\": \"\(claimed)\"")
        let r = h.ingest.handle(Array(body.utf8))
        #expect(r.status == 503 && r.code == "unknown_bundle")
        #expect(r.quarantine == .stored(lane: .untrusted))
        // The claim is clipped wherever it is kept outside the raw body: the row's column and the log fields.
        #expect((r.bundleID?.utf8.count ?? .max) <= ClaimedText.maxBytes)
        let row = try #require(try h.store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 1) }.first)
        #expect(row.lane == .untrusted)
        #expect((row.bundleID?.utf8.count ?? .max) <= ClaimedText.maxBytes && row.bundleID?.hasPrefix("xxxx") == true)
        #expect(row.message.utf8.count <= 300)
    }

    @Test func aV1BodyForAnUnconfiguredBundleIsJournaledOnReplayOnceTheBundleAndItsSecretAreConfigured() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"bid\": \"com.example.gateway\"", with: "\"bid\": \"com.example.late\"")
        #expect(h.ingest.handle(Array(body.utf8)).status == 503)
        let config = Self.fixedConfig.replacingOccurrences(
            of: #""bundle_id": "com.example.late", "app_apple_id": 7, "environments": ["sandbox"]"#,
            with:
                #""bundle_id": "com.example.late", "app_apple_id": 7, "environments": ["production"], "shared_secret_env": ["APP_SECRET"]"#
        )
        let fixed = try Self.ingest(over: h, configJSON: config, now: GatewayHarness.t + 3_600_000)
        let operations = Operations(store: h.store, now: { GatewayHarness.t + 3_600_000 })
        let secrets = [SharedSecret(name: "APP_SECRET", value: GatewayHarness.v1Secret)]
        let results = try #require(try operations.quarantineReplay(ingest: fixed, secrets: secrets).arrayValue)
        #expect(results.first?.objectValue?["status"] == .number("200"))
        #expect(try h.store.journal().filter { $0.bundleID == "com.example.late" }.count == 1)
    }

    @Test func refusedV2ClaimsAreClippedToo() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let huge = String(repeating: "é", count: 50_000)
        let body = try Self.v2Body(
            payload: Self.testPayload(bundle: huge, signedDate: String(GatewayHarness.t), uuid: "u"),
            bogusSignature: true
        )
        let r = h.ingest.handle(body)
        #expect(r.status == 403)
        #expect((r.bundleID?.utf8.count ?? .max) <= ClaimedText.maxBytes)
        // cut on a character boundary
        #expect(r.bundleID?.unicodeScalars.allSatisfy { $0 == "é" || $0 == "…" } == true)
        let row = try #require(try h.store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 1) }.first)
        #expect((row.bundleID?.utf8.count ?? .max) <= ClaimedText.maxBytes)
    }
}
