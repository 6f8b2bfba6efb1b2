import Receipts
import TestSupport
import Testing
import WireJSON

/// Apple's own verifyReceipt answer for a real receipt is the oracle of ``DecodedReceipt/receiptObject(requestDate:)``:
/// for the RevenueCat sandbox receipt of 2020, our `receipt` object equals Apple's key by key, value by value, type by
/// type (numbers stay numbers, strings strings) and in Apple's order — `in_app` entries included — given the request
/// date Apple's answer carries.
@Suite struct AppleAnswerOracleTests {
    static let name = "revenuecat-receiptsample1-sandbox-2020"
    /// `receipt.request_date_ms` of Apple's answer (2020-07-22 17:54:46.402 UTC).
    static let requestDate: Int64 = 1_595_440_486_402

    static func apple() throws -> JSONObject {
        let answer = try JSONParser.parse(try Fixtures.bytes("receipts/\(name).verifyreceipt.json"))
        return try #require(answer.objectValue?["receipt"]?.objectValue)
    }

    static func ours() throws -> JSONObject {
        let decoded = try ReceiptReader.read(try TestReceipts.text(name), trust: TestReceipts.apple)
        return try #require(decoded.receiptObject(requestDate: requestDate).objectValue)
    }

    /// Which of `a`'s members differ from `b`'s (missing, extra, another value or type, another position).
    static func differences(_ a: JSONObject, _ b: JSONObject, path: String) -> [String] {
        var out: [String] = []
        if a.keys != b.keys { out.append("\(path): keys \(a.keys) ≠ \(b.keys)") }
        for (key, value) in a {
            guard let other = b[key] else {
                out.append("\(path).\(key) missing")
                continue
            }
            if case .object(let x) = value, case .object(let y) = other {
                out += differences(x, y, path: "\(path).\(key)")
            } else if case .array(let xs) = value, case .array(let ys) = other {
                if xs.count != ys.count { out.append("\(path).\(key): \(xs.count) ≠ \(ys.count) elements") }
                for (i, (x, y)) in zip(xs, ys).enumerated() {
                    if let x = x.objectValue, let y = y.objectValue {
                        out += differences(x, y, path: "\(path).\(key)[\(i)]")
                    } else if x != y {
                        out.append("\(path).\(key)[\(i)]: \(x) ≠ \(y)")
                    }
                }
            } else if value != other {
                out.append("\(path).\(key): \(value) ≠ \(other)")
            }
        }
        return out
    }

    @Test func ourReceiptObjectIsApples() throws {
        let apple = try Self.apple()
        let ours = try Self.ours()
        #expect(Self.differences(apple, ours, path: "receipt") == [])
        #expect(Self.differences(ours, apple, path: "receipt") == [])
        #expect(ours == apple, "equal as values: members in the same order, the same JSON types")
    }

    @Test func theTypesAreApples() throws {
        let ours = try Self.ours()
        for key in ["adam_id", "app_item_id", "download_id", "version_external_identifier"] {
            guard case .number = ours[key] else {
                Issue.record("\(key) is not a number")
                continue
            }
        }
        for (key, value) in ours
        where key != "in_app"
            && !["adam_id", "app_item_id", "download_id", "version_external_identifier"].contains(key)
        {
            #expect(value.stringValue != nil, "\(key) is a string")
        }
        for entry in ours["in_app"]?.arrayValue ?? [] {
            for (key, value) in entry.objectValue ?? JSONObject() { #expect(value.stringValue != nil, "in_app.\(key)") }
        }
    }

    @Test func applesInAppOrderIsTheEncodedOrder() throws {
        // Apple answered in the receipt's own (DER-sorted) order, not by date: the decoded order, unchanged.
        let decoded = try ReceiptReader.read(try TestReceipts.text(Self.name), trust: TestReceipts.apple)
        let apple = try Self.apple()["in_app"]?.arrayValue?.map { $0.objectValue?["transaction_id"]?.stringValue }
        #expect(apple == decoded.app?.inApp.map(\.transactionID))
        let dates = decoded.app?.inApp.compactMap(\.purchaseDate) ?? []
        #expect(dates != dates.sorted(), "the fixture's order is not chronological")
    }
}
