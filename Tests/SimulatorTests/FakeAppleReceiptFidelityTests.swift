import Canonical
import Crypto
import Foundation
import Receipts
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import WireJSON

/// The fake verifyReceipt answers as Apple does (docs/simulator.md, "The fake verifyReceipt"): Apple's statuses for
/// bad requests, `latest_receipt` a real receipt signed now, `exclude-old-transactions`, no latest info without the
/// password, Apple's keys and `_pst` dates — compared with a real answer of Apple's (`Fixtures/receipts`) and a golden
/// answer (`Fixtures/simulator`).
@Suite struct FakeAppleReceiptFidelityTests {
    static func withHarness(_ body: (FakeAppleHarness, SimSubscription) throws -> Void) throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("auto-renew", pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let harness = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try harness.put(s)
            try body(harness, s)
        }
    }

    /// The answer to `request` (a JSON object's members) on the sandbox URL, as an object.
    static func ask(_ h: FakeAppleHarness, sandbox: Bool = true, _ request: [String: JSONValue]) throws -> JSONObject {
        let body = JSONValue.object(JSONObject(request.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        let response = h.verifyReceipt(sandbox: sandbox, body: body.canonicalBytes())
        #expect(response.status == 200)
        return try #require(try JSONParser.parse(response.body).objectValue)
    }

    static func keys(_ o: JSONObject?) -> [String] { o.map { $0.map(\.key) } ?? [] }

    @Test(arguments: ["not json", "[]", "", #""text""#, "{", "42"])
    func aBodyThatIsNotAJSONObjectAnswers21000(body: String) throws {
        try Self.withHarness { h, _ throws in
            for sandbox in [true, false] {
                let response = h.verifyReceipt(sandbox: sandbox, body: Array(body.utf8))
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == #"{"status":21000}"#)
            }
        }
    }

    @Test(arguments: ["!!!not base64!!!", "aGVsbG8gd29ybGQ=", "MAA=", "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"])
    func receiptDataThatIsNoReceiptAnswers21002(data: String) throws {
        try Self.withHarness { h, _ throws in
            for sandbox in [true, false] {
                let answer = try Self.ask(
                    h,
                    sandbox: sandbox,
                    ["receipt-data": .string(data), "password": .string(Sim.secret)]
                )
                #expect(answer["status"]?.int64Value == 21002, "\(data)")
                #expect(Self.keys(answer) == ["status"])
            }
        }
    }

    /// A receipt of the simulator's whose signature no longer holds.
    @Test func aTamperedReceiptAnswers21003() throws {
        try Self.withHarness { h, s throws in
            var der = try Base64.decode(
                Array(try h.apple.receipt(originalTransactionID: s.originalTransactionID).utf8),
                alphabet: .standard
            )
            der[der.count - 10] ^= 0x01  // inside the RSA signature, the last member of the SignedData
            let answer = try Self.ask(
                h,
                ["receipt-data": .string(Base64.encode(der, alphabet: .standard)), "password": .string(Sim.secret)]
            )
            #expect(answer["status"]?.int64Value == 21003)
        }
    }

    /// Apple returns the latest info only to a request carrying the shared secret (required for receipts with
    /// subscriptions); without it, status 0 and the receipt alone. A wrong one is 21004.
    @Test(arguments: [nil, JSONValue.string(""), JSONValue.null])
    func noPasswordAnswersTheReceiptWithoutLatestInfo(password: JSONValue?) throws {
        try Self.withHarness { h, s throws in
            var request: [String: JSONValue] = ["receipt-data": .string(s.receiptToken)]
            request["password"] = password
            let answer = try Self.ask(h, request)
            #expect(Self.keys(answer) == ["status", "environment", "receipt"])
            #expect(answer["status"]?.int64Value == 0)
            #expect(answer["receipt"]?.objectValue?["in_app"]?.arrayValue?.count == 3)
            let wrong = try Self.ask(
                h,
                ["receipt-data": .string(s.receiptToken), "password": .string("0" + Sim.secret)]
            )
            #expect(Self.keys(wrong) == ["status"] && wrong["status"]?.int64Value == 21004)
        }
    }

    /// `latest_receipt` is a PKCS#7 app receipt signed now by the simulator's receipt chain, holding every purchase:
    /// re-sent to the fake it answers the same subscription (and is a sandbox receipt to the production URL).
    @Test func latestReceiptIsASignedReceiptThatCanBeSentAgain() throws {
        try Self.withHarness { h, s throws in
            let device = try h.apple.receipt(originalTransactionID: s.originalTransactionID)
            let first = try Self.ask(h, ["receipt-data": .string(device), "password": .string(Sim.secret)])
            let latest = try #require(first["latest_receipt"]?.stringValue)
            let decoded = try ReceiptReader.read(Array(latest.utf8), trust: h.pki.receiptTrust)
            #expect(decoded.isAuthenticated && decoded.isSandbox)
            #expect(decoded.app?.bundleID == Sim.bundleID)
            #expect(decoded.app?.creationDate == h.now)
            #expect(
                Set(decoded.app?.inApp.compactMap(\.transactionID) ?? []) == Set(s.transactions.map(\.transactionID))
            )
            let again = try Self.ask(h, ["receipt-data": .string(latest), "password": .string(Sim.secret)])
            #expect(again["status"]?.int64Value == 0)
            #expect(again["latest_receipt_info"] == first["latest_receipt_info"])
            #expect(again["pending_renewal_info"] == first["pending_renewal_info"])
            let production = try Self.ask(h, sandbox: false, ["receipt-data": .string(latest)])
            #expect(Self.keys(production) == ["status"] && production["status"]?.int64Value == 21007)
        }
    }

    @Test func excludeOldTransactionsKeepsEachSubscriptionsNewest() throws {
        try Self.withHarness { h, s throws in
            let request: [String: JSONValue] = [
                "receipt-data": .string(s.receiptToken), "password": .string(Sim.secret),
            ]
            let all = try Self.ask(h, request)
            #expect(all["latest_receipt_info"]?.arrayValue?.count == 3)
            var only = request
            only["exclude-old-transactions"] = .bool(true)
            let newest = try #require(try Self.ask(h, only)["latest_receipt_info"]?.arrayValue)
            #expect(newest.count == 1)
            #expect(newest.first?.objectValue?["transaction_id"]?.stringValue == s.latest?.transactionID)
            #expect(
                try Self.ask(h, only)["receipt"]?.objectValue?["in_app"]?.arrayValue?.count == 3,
                "the receipt is whole"
            )
            only["exclude-old-transactions"] = .bool(false)
            #expect(try Self.ask(h, only)["latest_receipt_info"]?.arrayValue?.count == 3)
        }
    }

    /// The answer's members, the `receipt` object's and each transaction's are those of a real answer of Apple's.
    @Test func keysAreApplesOwn() throws {
        let apple = try #require(
            try JSONParser.parse(Fixtures.bytes("receipts/revenuecat-receiptsample1-sandbox-2020.verifyreceipt.json"))
                .objectValue
        )
        try Self.withHarness { h, s throws in
            let answer = try Self.ask(h, ["receipt-data": .string(s.receiptToken), "password": .string(Sim.secret)])
            #expect(Self.keys(answer) == Self.keys(apple))
            #expect(Self.keys(answer["receipt"]?.objectValue) == Self.keys(apple["receipt"]?.objectValue))
            #expect(Self.keys(answer["receipt"]?.objectValue).count == 18)
            let appleEntry = try #require(apple["latest_receipt_info"]?.arrayValue?.first?.objectValue)
            for case .object(let entry) in answer["latest_receipt_info"]?.arrayValue ?? [] {
                // Apple's keys in Apple's order, then what Apple's 2022 answers add (ownership) and the token.
                #expect(
                    Self.keys(entry).filter { !["in_app_ownership_type", "app_account_token"].contains($0) }
                        == Self.keys(appleEntry)
                )
            }
            let appleRenewal = Set(Self.keys(apple["pending_renewal_info"]?.arrayValue?.first?.objectValue))
            let renewal = Set(Self.keys(answer["pending_renewal_info"]?.arrayValue?.first?.objectValue))
            #expect(appleRenewal.isSubset(of: renewal))
        }
    }

    /// The whole answer (bar the freshly signed `latest_receipt`) against its golden file: every date as Apple's
    /// triplet, `_pst` in America/Los_Angeles with daylight saving time.
    @Test func answerMatchesItsGolden() throws {
        try Self.withHarness { h, s throws in
            let answer = try Self.ask(h, ["receipt-data": .string(s.receiptToken), "password": .string(Sim.secret)])
            #expect(answer["latest_receipt"]?.stringValue?.isEmpty == false)
            let rest = JSONValue.object(JSONObject(answer.filter { $0.key != "latest_receipt" })).text(pretty: true)
            #expect(!String(decoding: rest, as: UTF8.self).contains("null"), "Apple leaves out, never writes null")
            let golden = "simulator/verifyreceipt-auto-renew.expected.json"
            if Fixtures.updatingGoldens { try Fixtures.writeGolden(golden, rest) }
            #expect(String(decoding: rest, as: UTF8.self) + "\n" == (try Fixtures.text(golden)))
            let first = try #require(answer["latest_receipt_info"]?.arrayValue?.last?.objectValue)
            #expect(first["purchase_date"]?.stringValue == "2025-06-01 00:00:00 Etc/GMT")
            #expect(first["purchase_date_ms"]?.stringValue == "1748736000000")
            #expect(first["purchase_date_pst"]?.stringValue == "2025-05-31 17:00:00 America/Los_Angeles")
        }
    }
}
