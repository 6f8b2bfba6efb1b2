import Canonical
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// Send Consumption Information on the fake App Store Server API: Apple's rules one by one (status and errorCode),
/// the `202` and what is recorded, `GET /fake/consumption`, and the queued faults (`POST /fake/api/faults`).
@Suite struct FakeAppleConsumptionTests {
    /// A fake with two purchases: 100 coins (a consumable) and a monthly subscription.
    struct Rig {
        let h: FakeAppleHarness
        let coins: String
        let subscription: String

        static func path(_ transactionID: String) -> String { "/inApps/v2/transactions/consumption/" + transactionID }

        /// PUT with a valid token for `bundleID`.
        func put(_ transactionID: String, _ body: String, bundleID: String = Sim.bundleID) throws -> FakeAppleResponse {
            h.api("PUT", Self.path(transactionID), token: try h.token(bundleID: bundleID), body: Array(body.utf8))
        }

        /// The body exactly as the gateway's App Store Server API client encodes it.
        func put(_ transactionID: String, _ info: ConsumptionInformation) throws -> FakeAppleResponse {
            h.api("PUT", Self.path(transactionID), token: try h.token(), body: Array(try JSONEncoder().encode(info)))
        }

        func control(_ method: String, _ path: String, query: [String: String] = [:]) -> FakeAppleResponse {
            h.apple.handle(FakeAppleRequest(method: method, path: path, query: query))
        }
    }

    static func withRig(_ body: (Rig) throws -> Void) throws {
        try Sim.withPKI { pki throws in
            let coins = try #require(try Sim.plan("refund-request-consumable", pki: pki).emissions.first).subscription
            let monthly = try #require(
                try Sim.plan("auto-renew", pki: pki, firstID: 5_000).emissions.last
            ).subscription
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 10 * Sim.month)
            try h.put(coins)
            try h.put(monthly)
            try body(
                Rig(
                    h: h,
                    coins: try #require(coins.latest?.transactionID),
                    subscription: try #require(monthly.latest?.transactionID)
                )
            )
        }
    }

    /// A valid body with `changes` applied to its members (a nil value removes the member).
    static func body(_ changes: [String: String?] = [:]) -> String {
        var members: [(String, String?)] = [
            ("customerConsented", "true"), ("deliveryStatus", #""DELIVERED""#), ("sampleContentProvided", "false"),
        ]
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
            if let i = members.firstIndex(where: { $0.0 == name }) {
                members[i].1 = value
            } else {
                members.append((name, value))
            }
        }
        return "{" + members.compactMap { m in m.1.map { #""\#(m.0)":\#($0)"# } }.joined(separator: ",") + "}"
    }

    /// Status, Apple's errorCode and errorMessage of a refusal.
    static func refusal(_ r: FakeAppleResponse) throws -> (Int, Int64, String) {
        let body = try Sim.decode(AppStoreAPIErrorBody.self, r)
        return (r.status, body.errorCode, body.errorMessage)
    }

    // MARK: Accepted

    @Test func acceptedInformationIs202WithNoBodyAndIsRecorded() throws {
        try Self.withRig { rig throws in
            let info = ConsumptionInformation(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: true,
                consumptionPercentage: 25_000,
                refundPreference: .grantProrated
            )
            let answer = try rig.put(rig.coins, info)
            #expect(answer.status == 202)
            #expect(answer.body.isEmpty)
            let recorded = try rig.h.store.consumptionInfo(transactionID: rig.coins)
            #expect(
                recorded == [
                    SimConsumptionInfo(
                        transactionID: rig.coins,
                        bundleID: Sim.bundleID,
                        environment: "Sandbox",
                        customerConsented: true,
                        deliveryStatus: "DELIVERED",
                        sampleContentProvided: true,
                        consumptionPercentage: 25_000,
                        refundPreference: "GRANT_PRORATED",
                        receivedAt: rig.h.now,
                        count: 1
                    )
                ]
            )
        }
    }

    @Test func eachSendIsCountedPerTransaction() throws {
        try Self.withRig { rig throws in
            let decline = ConsumptionInformation(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: false,
                refundPreference: .decline
            )
            #expect(try rig.put(rig.coins, decline).status == 202)
            #expect(try rig.put(rig.subscription, Self.body()).status == 202)
            #expect(try rig.put(rig.coins, decline).status == 202)
            #expect(try rig.h.store.consumptionInfo(transactionID: rig.coins).map(\.count) == [1, 2])
            #expect(try rig.h.store.consumptionInfo(transactionID: rig.subscription).map(\.count) == [1])
            #expect(try rig.h.store.consumptionInfo().map(\.transactionID) == [rig.coins, rig.subscription, rig.coins])
        }
    }

    @Test func optionalMembersSentAsNullAreAbsent() throws {
        try Self.withRig { rig throws in
            let body = Self.body(["consumptionPercentage": "null", "refundPreference": "null"])
            #expect(try rig.put(rig.subscription, body).status == 202)
            let recorded = try #require(try rig.h.store.consumptionInfo(transactionID: rig.subscription).last)
            #expect(recorded.consumptionPercentage == nil && recorded.refundPreference == nil)
        }
    }

    @Test func theQueryEndpointListsWhatWasRecorded() throws {
        try Self.withRig { rig throws in
            #expect(try rig.put(rig.coins, Self.body(["refundPreference": #""DECLINE""#])).status == 202)
            #expect(try rig.put(rig.subscription, Self.body()).status == 202)
            let all = rig.control("GET", "/fake/consumption")
            #expect(all.status == 200)
            let listed = try #require(try JSONParser.parse(all.body).objectValue)
            #expect(listed["count"]?.int64Value == 2)
            let one = rig.control("GET", "/fake/consumption", query: ["transaction_id": rig.coins])
            let item = try #require(
                try JSONParser.parse(one.body).objectValue?["consumption_info"]?.arrayValue?.first?.objectValue
            )
            #expect(item["transaction_id"]?.stringValue == rig.coins)
            #expect(item["bundle_id"]?.stringValue == Sim.bundleID)
            #expect(item["environment"]?.stringValue == "Sandbox")
            #expect(item["customer_consented"]?.boolValue == true)
            #expect(item["delivery_status"]?.stringValue == "DELIVERED")
            #expect(item["sample_content_provided"]?.boolValue == false)
            #expect(item["consumption_percentage"]?.isNull == true)
            #expect(item["refund_preference"]?.stringValue == "DECLINE")
            #expect(item["received_at"]?.int64Value == rig.h.now)
            #expect(item["count"]?.int64Value == 1)
            #expect(rig.control("DELETE", "/fake/consumption").status == 200)
            #expect(try rig.h.store.consumptionInfo().isEmpty)
        }
    }

    // MARK: Apple's rules, in order

    @Test func aMissingOrBadTokenIs401AndRecordsNothing() throws {
        try Self.withRig { rig throws in
            let path = Rig.path(rig.coins)
            #expect(rig.h.api("PUT", path, token: nil, body: Array(Self.body().utf8)).status == 401)
            #expect(rig.h.api("PUT", path, token: "not.a.jwt", body: Array(Self.body().utf8)).status == 401)
            #expect(try rig.h.store.consumptionInfo().isEmpty)
        }
    }

    @Test func aTransactionIDThatIsNotOneIs4000006() throws {
        try Self.withRig { rig throws in
            #expect(try Self.refusal(try rig.put("abc", Self.body())).0 == 400)
            #expect(try Self.refusal(try rig.put("12x4", Self.body())).1 == 4_000_006)
        }
    }

    @Test func aTransactionUnknownForTheTokensAppIs404() throws {
        try Self.withRig { rig throws in
            let unknown = try Self.refusal(try rig.put("2999999999999999", Self.body()))
            #expect(unknown.0 == 404 && unknown.1 == 4_040_010)
            let foreign = try Self.refusal(try rig.put(rig.coins, Self.body(), bundleID: "com.example.other"))
            #expect(foreign.0 == 404 && foreign.1 == 4_040_010)
            // Before the body is looked at.
            #expect(try Self.refusal(try rig.put("2999999999999999", "not json")).1 == 4_040_010)
        }
    }

    @Test(arguments: [
        "not json", "[]", "{}", #"{"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#,
        #"{"customerConsented":true,"sampleContentProvided":false}"#,
        #"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#,
    ])
    func aBodyThatIsNotJSONOrLacksARequiredMemberIs4000000(_ body: String) throws {
        try Self.withRig { rig throws in
            let r = try Self.refusal(try rig.put(rig.coins, body))
            #expect(r.0 == 400 && r.1 == 4_000_000 && r.2 == "Invalid request.")
        }
    }

    @Test(arguments: ["false", "null", #""true""#, "1"])
    func customerConsentOtherThanTrueIs4000035(_ value: String) throws {
        try Self.withRig { rig throws in
            // Before the delivery status, which is wrong too.
            let body = Self.body(["customerConsented": value, "deliveryStatus": #""LOST""#])
            let r = try Self.refusal(try rig.put(rig.coins, body))
            #expect(r.0 == 400 && r.1 == 4_000_035)
        }
    }

    @Test(arguments: [#""LOST""#, #""delivered""#, "null", "0"])
    func aDeliveryStatusAppleDoesNotKnowIs4000036(_ value: String) throws {
        try Self.withRig { rig throws in
            let body = Self.body(["deliveryStatus": value, "sampleContentProvided": #""no""#])
            let r = try Self.refusal(try rig.put(rig.coins, body))
            #expect(r.0 == 400 && r.1 == 4_000_036)
        }
    }

    @Test(arguments: [#""no""#, "null", "0"])
    func sampleContentProvidedThatIsNotABooleanIs4000041(_ value: String) throws {
        try Self.withRig { rig throws in
            let body = Self.body(["sampleContentProvided": value, "refundPreference": #""MAYBE""#])
            let r = try Self.refusal(try rig.put(rig.coins, body))
            #expect(r.0 == 400 && r.1 == 4_000_041)
        }
    }

    @Test(arguments: [#""MAYBE""#, #""decline""#, "1"])
    func aRefundPreferenceAppleDoesNotKnowIsInvalidRefundPreference(_ value: String) throws {
        try Self.withRig { rig throws in
            let body = Self.body(["refundPreference": value, "consumptionPercentage": "-1"])
            let r = try Self.refusal(try rig.put(rig.coins, body))
            #expect(r.0 == 400 && r.1 == 4_000_000 && r.2.hasPrefix("InvalidRefundPreferenceError"))
        }
    }

    @Test(arguments: ["-1", "100001", "50.5", #""50""#])
    func aPercentageOutsideZeroToAHundredThousandIsOutOfRange(_ value: String) throws {
        try Self.withRig { rig throws in
            // Out of range comes before the subscription's own rule.
            let r = try Self.refusal(try rig.put(rig.subscription, Self.body(["consumptionPercentage": value])))
            #expect(r.0 == 400 && r.1 == 4_000_000 && r.2.hasPrefix("ConsumptionPercentageOutOfRangeError"))
        }
        try Self.withRig { rig throws in
            for edge in ["0", "100000"] {
                #expect(try rig.put(rig.coins, Self.body(["consumptionPercentage": edge])).status == 202)
            }
        }
    }

    @Test(arguments: ConsumptionInformation.DeliveryStatus.allCases.filter { $0 != .delivered })
    func anUndeliveredPurchaseWithAPercentageAboveZeroIsRefused(
        _ status: ConsumptionInformation.DeliveryStatus
    )
        throws
    {
        try Self.withRig { rig throws in
            let delivery = #""\#(status.rawValue)""#
            let refused = Self.body(["deliveryStatus": delivery, "consumptionPercentage": "1"])
            let r = try Self.refusal(try rig.put(rig.coins, refused))
            #expect(r.0 == 400 && r.1 == 4_000_000 && r.2.hasPrefix("UndeliveredConsumptionPercentageNonZeroError"))
            let zero = Self.body(["deliveryStatus": delivery, "consumptionPercentage": "0"])
            #expect(try rig.put(rig.coins, zero).status == 202)
        }
    }

    @Test func aPercentageForAnAutoRenewableSubscriptionIsRefused() throws {
        try Self.withRig { rig throws in
            let r = try Self.refusal(try rig.put(rig.subscription, Self.body(["consumptionPercentage": "0"])))
            #expect(
                r.0 == 400 && r.1 == 4_000_000 && r.2.hasPrefix("ConsumptionPercentageAutoRenewableSubscriptionError")
            )
            let without = ConsumptionInformation(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: false,
                refundPreference: .grantFull
            )
            #expect(try rig.put(rig.subscription, without).status == 202)
        }
    }

    @Test func refusedRequestsRecordNothing() throws {
        try Self.withRig { rig throws in
            _ = try rig.put(rig.coins, Self.body(["customerConsented": "false"]))
            _ = try rig.put(rig.coins, "not json")
            _ = try rig.put("2999999999999999", Self.body())
            #expect(try rig.h.store.consumptionInfo().isEmpty)
        }
    }

    // MARK: Faults

    @Test func aQueuedRateLimitCarriesRetryAfterOneSecondByDefault() throws {
        try Self.withRig { rig throws in
            try rig.h.store.update { $0.apiFaults = [429] }
            let limited = try rig.put(rig.coins, Self.body())
            #expect(limited.status == 429)
            #expect(try FakeAppleHarness.errorCode(limited) == 4_290_000)
            #expect(limited.header("Retry-After") == "1")
            #expect(try rig.h.store.consumptionInfo().isEmpty, "the faulted request is not recorded")
            #expect(try rig.put(rig.coins, Self.body()).status == 202)
            #expect(try rig.h.store.consumptionInfo(transactionID: rig.coins).map(\.count) == [1])
        }
    }

    @Test func queuedFaultsAnswerApplesErrorForTheirStatus() throws {
        try Self.withRig { rig throws in
            try rig.h.store.update { $0.apiFaults = [400, 404, 500, 503, 401] }
            let expected: [(Int, Int64)] = [(400, 4_000_000), (404, 4_040_010), (500, 5_000_000), (503, 5_000_000)]
            for (status, code) in expected {
                let r = try rig.put(rig.coins, Self.body())
                let errorCode = try FakeAppleHarness.errorCode(r)
                #expect(r.status == status && errorCode == code, "\(status)")
                #expect(r.header("Retry-After") == nil)
            }
            // Any other status keeps the body it always had.
            let other = try rig.put(rig.coins, Self.body())
            let otherCode = try FakeAppleHarness.errorCode(other)
            #expect(other.status == 401 && otherCode == 5_000_000)
            #expect(try rig.put(rig.coins, Self.body()).status == 202)
        }
    }

    @Test func theFaultsControlEndpointQueuesWithRetryAfter() throws {
        try Self.withRig { rig throws in
            let queued = rig.control(
                "POST",
                "/fake/api/faults",
                query: ["status": "429", "count": "2", "retry_after": "7"]
            )
            #expect(queued.status == 200)
            #expect(String(decoding: queued.body, as: UTF8.self) == #"{"queued":[429,429],"retry_after":7}"#)
            #expect(rig.control("POST", "/fake/api/faults", query: ["status": "500"]).status == 200)
            #expect(try rig.h.store.read().apiFaults == [429, 429, 500])
            let first = try rig.put(rig.coins, Self.body())
            #expect(first.status == 429 && first.header("Retry-After") == "7")
            let listed = rig.control("GET", "/fake/api/faults")
            #expect(String(decoding: listed.body, as: UTF8.self) == #"{"queued":[429,500],"retry_after":7}"#)
            #expect(rig.control("DELETE", "/fake/api/faults").status == 200)
            #expect(try rig.h.store.read().apiFaults.isEmpty)
            #expect(try rig.put(rig.coins, Self.body()).status == 202)
        }
    }

    @Test(arguments: [
        ["status": "200"], ["status": "x"], [:], ["status": "429", "count": "0"],
        ["status": "429", "retry_after": "-1"], ["status": "429", "retry_after": "soon"],
    ])
    func theFaultsControlEndpointRefusesBadParameters(_ query: [String: String]) throws {
        try Self.withRig { rig throws in
            let r = rig.control("POST", "/fake/api/faults", query: query)
            #expect(r.status == 400)
            #expect(try JSONParser.parse(r.body).objectValue?["error"]?.stringValue != nil)
            #expect(try rig.h.store.read().apiFaults.isEmpty)
        }
    }
}
