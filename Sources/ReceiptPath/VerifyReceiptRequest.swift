internal import WireJSON

/// A verifyReceipt request as Apple takes it: `{"receipt-data": BASE64, "password": SECRET, "exclude-old-transactions":
/// BOOL}` (docs/operations.md, "Moving the receipt path"). The password is held only to be compared (or forwarded to
/// Apple); it is never logged, stored or put in an error.
package struct VerifyReceiptRequest: Sendable {
    package var receiptData: [UInt8]
    package var password: String?
    package var excludeOldTransactions: Bool

    /// nil when the body is not a JSON object with a string `receipt-data`; members Apple ignores are ignored.
    package static func parse(_ body: [UInt8]) -> VerifyReceiptRequest? {
        guard case .object(let o)? = try? JSONParser.parse(body), case .string(let data)? = o["receipt-data"] else {
            return nil
        }
        let password: String?
        switch o["password"] {
        case .string(let p)? where !p.isEmpty: password = p
        default: password = nil
        }
        let exclude: Bool
        switch o["exclude-old-transactions"] {
        case .bool(let b)?: exclude = b
        // Old clients send the flag as a string or a number.
        case .string(let s)?: exclude = s == "true" || s == "1"
        case .number(let n)?: exclude = n != "0"
        default: exclude = false
        }
        return VerifyReceiptRequest(receiptData: Array(data.utf8), password: password, excludeOldTransactions: exclude)
    }
}
