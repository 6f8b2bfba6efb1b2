import Canonical
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// "Which bundle does this V1 body claim" has one answer: `V1Adapter.claimedBundle(body:)` (bytes, unauthenticated)
/// gives exactly what authentication reads (`ResponseBodyV1.bundleID`), for every real and synthetic body, including
/// Apple's pre-2021 bodies that name the bundle only in `latest_expired_receipt_info` (which the gateway's own copy
/// of the rule missed, so `verify --shared-secret-env` refused a real CANCEL as `unknown_bundle`).
@Suite struct V1BundleClaimTests {
    static let folders = ["v1", "v1-synthetic"]

    /// Every notification body of the V1 fixture folders (verifyReceipt answers and `.receipt.json` excluded).
    static var notificationBodies: [String] {
        folders.flatMap { folder in
            Fixtures.names(in: folder).filter { !$0.hasSuffix(".receipt.json") }.compactMap { name -> String? in
                let path = "\(folder)/\(name)"
                guard let bytes = try? Fixtures.bytes(path), case .object(let o)? = try? JSONParser.parse(bytes),
                    o["notification_type"] != nil
                else { return nil }
                return path
            }
        }
    }

    static let expected: [String: String] = [
        "v1/v1-notif-cancel-prod-2019.json": "com.freeramble.smsautosenderpro",
        "v1/v1-notif-did-change-renewal-status-expired-prod-2019.json": "com.freeramble.smsautosender",
        "v1/v1-notif-did-change-renewal-pref-prod-2019.json": "com.freeramble.smsautosender",
        "v1/v1-notif-did-change-renewal-status-2020-imdhemy.json": "com.some.thing",
        "v1/v1-notif-did-change-renewal-status-prod-2019.json": "production_id_indentifier",
        "v1/v1-notif-did-recover-prod-2019.json": "com.freeramble.smsautosender",
        "v1/v1-notif-initial-buy-prod-2019.json": "com.freeramble.smsautosender",
        "v1/v1-notif-initial-buy-prod-2020-educreations.json": "com.educreations.ios.Educreations",
        "v1/v1-notif-refund-prod-2020-educreations.json": "com.educreations.ios.Educreations",
        "v1/v1-notif-renewal-sandbox-2019.json": "com.freeramble.smsautosenderpro",
    ]

    @Test func everyFixtureFolderHasNotificationBodies() {
        let bodies = Self.notificationBodies
        #expect(bodies.count == Self.expected.count + 13)
        #expect(Set(Self.expected.keys).isSubset(of: Set(bodies)))
    }

    @Test(arguments: notificationBodies)
    func claimIsWhatAuthenticationReads(_ path: String) throws {
        let bytes = try Fixtures.bytes(path)
        let claim = try #require(V1Adapter.claimedBundle(body: bytes), "\(path) claims no bundle")
        #expect(claim == Self.expected[path] ?? "com.example.gateway", "\(path)")
        let decoded = try JSONValueDecoder().decode(ResponseBodyV1.self, from: bytes)
        #expect(decoded.bundleID == claim)
        // An app configured for the claimed bundle with the body's (placeholder) password accepts it: what
        // `verify --shared-secret-env` does.
        let password = try #require(decoded.password)
        let app = V1App(
            bundleID: claim,
            environments: [.production, .sandbox],
            sharedSecrets: [SharedSecret(name: "ADHOC", value: password)],
            verifyReceipt: false
        )
        let n = try V1Adapter(apps: [app]).authenticate(body: bytes)
        #expect(n.bundleID == claim)
        let event = V1EventBuilder().event(
            for: n.body,
            id: n.eventID,
            facts: V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID),
            arrival: 1_764_000_000_000
        )
        #expect(event.bundleID == claim)
    }

    @Test func preTwentyTwentyOneCancelIsAuthenticatedForTheBundleInItsExpiredReceiptInfo() throws {
        let bytes = try Fixtures.bytes("v1/v1-notif-cancel-prod-2019.json")
        let app = V1App(
            bundleID: "com.freeramble.smsautosenderpro",
            environments: [.production],
            sharedSecrets: [SharedSecret(name: "S", value: "<redacted: shared secret present in source>")],
            verifyReceipt: false
        )
        let n = try V1Adapter(apps: [app]).authenticate(body: bytes)
        let e = V1EventBuilder().event(
            for: n.body,
            id: n.eventID,
            facts: V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID),
            arrival: 1_764_000_000_000
        )
        #expect(e.kind == .refund && e.entitlement?.state == .revoked && e.eventDate == 1_574_419_054_000)
        #expect(e.originalTransactionID == "90000656077819")
    }

    static func claim(_ json: String) -> String? { V1Adapter.claimedBundle(body: Array(json.utf8)) }

    @Test func precedenceIsTopLevelThenLatestThenLatestExpired() {
        let lei = "\"latest_expired_receipt_info\":{\"bid\":\"c\"}"
        #expect(Self.claim("{\"bid\":\"a\",\"latest_receipt_info\":{\"bid\":\"b\"},\(lei)}") == "a")
        #expect(Self.claim("{\"latest_receipt_info\":{\"bid\":\"b\"},\(lei)}") == "b")
        #expect(Self.claim("{\"latest_receipt_info\":[{\"bid\":\"b1\"},{\"bid\":\"b2\"}],\(lei)}") == "b1")
        #expect(Self.claim("{\"latest_receipt_info\":[],\(lei)}") == "c")
        #expect(Self.claim("{\"latest_receipt_info\":{},\(lei)}") == "c")
        #expect(Self.claim("{\(lei)}") == "c")
        // unified_receipt is not part of the rule (its transactions carry no bid in Apple's data).
        #expect(Self.claim("{\"unified_receipt\":{\"latest_receipt_info\":[{\"bid\":\"u\"}]}}") == nil)
    }

    @Test func claimSurvivesMistypedMembersOutsideTheRule() {
        // Authentication refuses these as malformed; the log line still names the claimed bundle.
        #expect(
            Self.claim("{\"notification_type\":5,\"latest_expired_receipt_info\":{\"bid\":\"c\",\"product_id\":7}}")
                == "c"
        )
        #expect(Self.claim("{\"password\":[],\"latest_receipt_info\":[{\"bid\":\"b\",\"quantity\":{}}]}") == "b")
    }

    @Test func bodiesThatClaimNothingGiveNil() {
        for text in [
            "", "[]", "\"bid\"", "{}", "{\"bid\":5}", "{\"bid\":null}", "{\"latest_receipt_info\":[5]}",
            "{\"latest_expired_receipt_info\":\"x\"}",
            "{\"bid\":\"a\",\"bid\":\"b\"}", String(repeating: "[", count: 10_000),
        ] {
            #expect(Self.claim(text) == nil, "\(text.prefix(40))")
        }
    }
}
