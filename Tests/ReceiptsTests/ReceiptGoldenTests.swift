import Receipts
import TestSupport
import Testing
import WireJSON

/// Every real receipt through `iap-gateway receipt decode`'s code path (``DecodedReceipt/report(requestDate:)``),
/// compared with the golden `<name>.expected.json` beside it in `Fixtures/receipts` (request date fixed at
/// 2025-06-01T00:00:00Z). Set IAPGW_UPDATE_GOLDENS=1 to rewrite the goldens (then review the diff by hand).
@Suite struct ReceiptGoldenTests {
    static func report(_ name: String) throws -> [UInt8] {
        let decoded = try ReceiptReader.read(try TestReceipts.text(name), trust: TestReceipts.apple)
        return decoded.report(requestDate: TestReceipts.june2025).text(pretty: true)
    }

    @Test(arguments: TestReceipts.names)
    func decodesAsItsGoldenSays(_ name: String) throws {
        let actual = try Self.report(name)
        let path = "receipts/\(name).expected.json"
        if Fixtures.updatingGoldens {
            try Fixtures.writeGolden(path, actual)
            return
        }
        let expected = try Fixtures.bytes(path)
        #expect(
            String(decoding: actual + [0x0A], as: UTF8.self) == String(decoding: expected, as: UTF8.self),
            "\(name)"
        )
        // The golden is JSON the project's strict parser accepts, the same value as printed.
        #expect(try JSONParser.parse(expected) == JSONParser.parse(actual))
    }
}
