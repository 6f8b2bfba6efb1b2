import Canonical
import Foundation
import Gateway
import Store
import TestSupport
import Testing
import WireJSON

/// The hand-written writer must produce exactly JSONEncoder's bytes (sorted keys, unescaped slashes).
@Suite struct CanonicalJSONTests {
    static var goldenEvents: [CanonicalEvent] {
        var out: [CanonicalEvent] = []
        for folder in ["v2", "v2-synthetic", "v1", "v1-synthetic"] {
            let urls = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.url(folder).path())) ?? []
            for name in urls where name.hasSuffix(".expected.json") {
                guard let bytes = try? Fixtures.bytes("\(folder)/\(name)"),
                    case .object(let o)? = try? JSONParser.parse(bytes),
                    case .array(let events)? = o["events"]
                else { continue }
                for e in events {
                    if let event = try? JSONValueDecoder().decode(CanonicalEvent.self, from: e) { out.append(event) }
                }
            }
        }
        return out
    }

    @Test func everyGoldenEventEncodesToJSONEncodersBytes() {
        let events = Self.goldenEvents
        #expect(events.count > 60)
        for e in events {
            #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e), "\(e.id)")
        }
    }

    @Test func escapesAndUnusualValuesMatchToo() {
        var e = CanonicalEvent(
            id: "a\"b\\c/d\n\u{1}é😀",
            source: .v1,
            kind: EventKind(rawValue: "future"),
            rawType: "T\tX",
            eventDate: -5,
            eventDateSource: .arrival,
            verified: false
        )
        e.priceMilli = Int64.max
        e.appAppleID = Int64.min
        e.autoRenew = false
        #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e))
        let state = SubscriptionState(path: .v1, event: e)
        #expect(CanonicalJSON.encode(state) == JSONOutput.encode(state))
    }

    @Test func theKeysOfOneKindOnlyMatchWhenSetAndWhenLeftOut() {
        var e = CanonicalEvent(
            id: "n-1",
            source: .v2,
            kind: .externalPurchaseToken,
            reason: .created,
            rawType: "EXTERNAL_PURCHASE_TOKEN",
            rawSubtype: "CREATED",
            eventDate: 1_748_736_000_000,
            eventDateSource: .signedDate,
            verified: true
        )
        #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e))
        e.externalPurchaseID = "SANDBOX_6f1e3c55"
        e.externalPurchaseTokenType = "ACQUISITION"
        e.externalPurchaseTokenCreationDate = 1_748_735_940_000
        e.externalPurchaseTokenExpirationDate = 1_751_328_000_000
        e.appTransactionID = "704000000000012345"
        #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e))
        #expect(String(decoding: CanonicalJSON.encode(e), as: UTF8.self).contains(#""app_transaction_id":"#))
    }

    @Test func theMultiseatKeysMatchWhenSetAndWhenLeftOut() {
        var e = CanonicalEvent(
            id: "n-2",
            source: .v2,
            kind: .seatsRefunded,
            rawType: "REFUND",
            rawSubtype: "SEATS",
            eventDate: 1_748_736_000_000,
            eventDateSource: .signedDate,
            verified: true
        )
        #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e))
        e.revokedSeats = 3
        e.invitationManagement = "developer"
        e.seatPriceTiers = [
            SeatPriceTier(priceMilli: 9_990, quantity: 5), SeatPriceTier(priceMilli: 7_990, quantity: 3),
        ]
        e.amountMilli = 73_920
        e.additionalTransactionReason = "seat_addition"
        e.renewalQuantity = 6
        e.renewalSeatPriceTiers = [SeatPriceTier(priceMilli: 9_990, quantity: 6)]
        e.unclaimedSeatIDs = ["0f8fad5b-d9cb-469f-a165-70867728950e", "a\"b"]
        e.groupSeats = 9
        #expect(CanonicalJSON.encode(e) == JSONOutput.encode(e))
        var state = SubscriptionState(path: .v2, event: e)
        #expect(CanonicalJSON.encode(state) == JSONOutput.encode(state))
        state.seats = nil
        state.renewalSeats = nil
        #expect(CanonicalJSON.encode(state) == JSONOutput.encode(state))
    }
}
