import Canonical
import Crypto
import Gateway
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

/// The request path without HTTP: what is answered, what is journaled, what is quarantined where.
@Suite struct NotificationIngestTests {
    @Test func v2NotificationIsJournaledWithItsEventsAndDeliveries() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        let r = h.ingest.handle(body)
        #expect(r.status == 200 && !r.duplicate && r.version == .v2)
        #expect(try h.store.journal().count == 1)
        #expect(try h.store.events().filter { $0.authoritative && $0.path == .v2 }.count == 1)
        // Authority v2: authoritative events go to the webhooks, not to shadow-only ones twice; the pass-through gets
        // the notification (its V1 shape, built at delivery), not the event.
        #expect(try h.store.deliveries().filter { $0.downstream == "main" }.count == 1)
        #expect(try h.store.deliveries().filter { $0.downstream == "shadow" }.count == 1)
        #expect(try h.store.deliveries().filter { $0.downstream == "legacy" }.map(\.eventID) == [nil])
        let otid = try #require(try h.store.events().first?.event.originalTransactionID)
        #expect(try h.store.subscriptionStates(otid).filter { $0.path == .v2 }.count == 1)
        // The journal keeps the body byte for byte.
        let stored = try h.store.journal().first?.body
        #expect(stored == body)
    }

    @Test func appleRetriesAreDuplicatesThatAddNothing() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        #expect(h.ingest.handle(body).status == 200)
        let again = h.ingest.handle(body)
        #expect(again.status == 200 && again.duplicate)
        #expect(try h.store.journal().count == 1)
        #expect(try h.store.deliveries().count == 3)
    }

    @Test(arguments: [
        ("v2-synthetic/negative/tampered-payload.json", 403, "bad_signature", "untrusted"),
        ("v2-synthetic/negative/x5c-root-not-pinned.json", 403, "untrusted_root", "untrusted"),
        ("v2-synthetic/negative/payload-not-json.json", 400, "malformed", "untrusted"),
        ("v2-synthetic/negative/body-unknown-version.json", 400, "unknown_version", "untrusted"),
        ("v2-synthetic/negative/wrong-bundle.json", 503, "unknown_bundle", "genuine"),
        ("v2-synthetic/negative/wrong-environment.json", 503, "environment_mismatch", "genuine"),
        (
            "v2-synthetic/negative/nested-transaction-wrong-bundle.json", 503, "nested_jws_invalid:unknown_bundle",
            "genuine"
        ),
        (
            "v2-synthetic/negative/nested-transaction-other-key.json", 403, "nested_jws_invalid:bad_signature",
            "untrusted"
        ),
    ])
    func refusalsGetTheirStatusAndQuarantineLane(_ file: String, _ status: Int, _ code: String, _ lane: String) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = h.ingest.handle(try Fixtures.bytes(file))
        #expect(r.status == status)
        #expect(r.code == code)
        #expect(try h.store.journal().count == 0)
        #expect(try h.store.quarantined().filter { $0.lane.rawValue == lane }.count == 1)
        let error = try #require(JSONParser.parse(r.body).objectValue?["error"]?.objectValue)
        #expect(error["code"]?.stringValue == code.split(separator: ":").first.map(String.init))
    }

    @Test func aReplayIsJudgedAsOfTheRowsArrivalNeverMoreLeniently() throws {
        let h = try GatewayHarness(now: GatewayHarness.t + 30 * 86_400_000)
        defer { h.close() }
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        #expect(h.ingest.handle(body).code == "stale_notification")
        // It arrived 30 days after it was signed: a replay refuses it too (it used to skip freshness and accept it).
        let late = h.ingest.handle(body, origin: .quarantineReplay(arrivedAt: GatewayHarness.t + 30 * 86_400_000))
        #expect(late.status == 403 && late.code == "stale_notification")
        // A replay does not quarantine again: its outcome is recorded on the row it came from.
        #expect(try h.store.quarantined().count == 1)
        // Had it arrived an hour after it was signed (refused then for a config problem, say), it is accepted now.
        let fresh = h.ingest.handle(body, origin: .quarantineReplay(arrivedAt: GatewayHarness.t + 3_600_000))
        #expect(fresh.status == 200)
        #expect(try h.store.journal().filter { $0.receivedAt == GatewayHarness.t + 3_600_000 }.count == 1)
    }

    @Test func theDemoVerifyTimeAppliesToSandboxOnlyAndNeverToProduction() throws {
        let now = GatewayHarness.t + 30 * 86_400_000
        let h = try GatewayHarness(now: now)
        defer { h.close() }
        var limits = NotificationIngest.Limits()
        limits.demoSandboxVerifyTime = GatewayHarness.t + 60_000
        let demo = NotificationIngest(
            v1: h.ingest.v1,
            v2: h.ingest.v2,
            store: h.store,
            router: h.router,
            limits: limits,
            metrics: Metrics(),
            now: { now }
        )
        // A sandbox sample signed a month ago passes as if it had arrived a minute after it was signed...
        #expect(demo.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        // ...but a payload claiming production is judged by the clock: stale, whatever the override says.
        let production = try QuarantineReplayTests.v2Body(
            payload: """
                {"notificationType":"TEST","notificationUUID":"p","data":{"bundleId":"com.example.gateway","appAppleId":1234567890,\
                "environment":"Production"},"version":"2.0","signedDate":\(GatewayHarness.t)}
                """
        )
        #expect(demo.handle(production).code == "stale_notification")
    }

    @Test func oversizedBodiesAreRefusedAndNeverStored() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = h.ingest.handle(Array(repeating: UInt8(ascii: " "), count: 1024 * 1024 + 1))
        #expect(r.status == 413 && r.code == "body_too_large")
        #expect(try h.store.quarantined().count == 0)
    }

    @Test func v1BodyIsJournaledWithoutItsSecretAndWaitsForVerifyReceipt() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = try Fixtures.bytes("v1-synthetic/did-renew.json")
        let r = h.ingest.handle(body)
        #expect(r.status == 200 && r.version == .v1 && r.id?.hasPrefix("v1:") == true)
        #expect(try h.store.receiptJobs().filter { $0.state == .pending }.count == 1)
        #expect(try h.store.events().count == 0)  // events come after Apple answers
        #expect(try h.store.deliveries().filter { $0.downstream == "legacy" }.count == 1)
        let stored = String(decoding: try h.store.journal().first?.body ?? [], as: UTF8.self)
        #expect(!stored.contains(GatewayHarness.v1Secret))
        #expect(stored.contains("iapgw-secret:APP_SECRET"))
        #expect(try h.store.journal().first?.secretName == "APP_SECRET")
    }

    @Test func v1WithAWrongPasswordIs401AndOnlyItsFingerprintIsKept() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let wrong = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: GatewayHarness.v1Secret, with: "ffffffffffffffffffffffffffffffff")
        let r = h.ingest.handle(Array(wrong.utf8))
        #expect(r.status == 401 && r.code == "bad_shared_secret")
        let row = try #require(try h.store.quarantined().first)
        #expect(row.lane == .untrusted)
        #expect(row.passwordFingerprint == SHA256.hex(Array("ffffffffffffffffffffffffffffffff".utf8)))
        #expect(!String(decoding: row.body, as: UTF8.self).contains("ffffffffffffffffffffffffffffffff"))
    }

    @Test func optedOutV1BundleGetsUnverifiedEventsAtOnce() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"bid\": \"com.example.gateway\"", with: "\"bid\": \"com.example.optout\"")
        let r = h.ingest.handle(Array(body.utf8))
        #expect(r.status == 200)
        let json = try #require(try h.store.events().first?.json)
        let event = try JSONValueDecoder().decode(CanonicalEvent.self, from: json)
        #expect(event.verified == false && event.kind == .renewal)
        #expect(try h.store.receiptJobs().count == 0)
    }

    /// An opted-out V1 body (its events made from the body itself) whose product ids are 140 KB each: its event would be
    /// larger than the store keeps (docs/architecture.md, "Capped values"), so the notification is refused and
    /// quarantined, never answered 503 for a retry that would fail the same way, and nothing of it is stored.
    @Test func anEventLargerThanTheStoreKeepsIsRefusedAndQuarantined() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"bid\": \"com.example.gateway\"", with: "\"bid\": \"com.example.optout\"")
            .replacingOccurrences(of: "com.example.gateway.monthly", with: String(repeating: "P", count: 140_000))
        #expect(body.utf8.count < 1_048_576)
        let r = h.ingest.handle(Array(body.utf8))
        #expect(r.status == 400 && r.code == "malformed_body")
        #expect(String(decoding: r.body, as: UTF8.self).contains("value_too_large"))
        #expect(try h.store.journal().isEmpty && h.store.events().isEmpty)
        let row = try #require(try h.store.quarantined().first)
        #expect(row.code == "malformed_body" && row.bundleID == "com.example.optout")
        #expect(!String(decoding: row.body, as: UTF8.self).contains(GatewayHarness.v1Secret))
    }
}
