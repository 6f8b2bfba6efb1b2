/// Why bytes are not a receipt this module can read (docs/architecture.md, "The receipt reader"). A receipt that
/// reads but whose signature fails is not an error: ``ReceiptReader`` returns it with
/// ``ReceiptSignature/valid`` false. Equality uses the code only; `reason` never holds receipt bytes or ids.
public struct ReceiptError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable code (log lines, the endpoint's mapping to verifyReceipt statuses).
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Nothing but white space.
        public static let empty = Self(rawValue: "empty")
        /// Not base64 (in any of the accepted spellings), or a receipt whose container or payload does not decode.
        public static let malformed = Self(rawValue: "malformed")
        /// Larger than the size limit (``ReceiptReader/defaultMaxBytes`` decoded bytes unless the caller set another).
        public static let tooLarge = Self(rawValue: "too_large")
        /// BER nested deeper than ``ReceiptReader/maxDepth`` levels (a nesting bomb, or not a receipt).
        public static let tooDeep = Self(rawValue: "too_deep")
        /// Decodes, but is neither an app receipt (PKCS#7) nor an iOS 6 transaction receipt.
        public static let notAReceipt = Self(rawValue: "not_a_receipt")
        /// A StoreKit 2 signed transaction (compact JWS, `eyJ…`): not a receipt; it is verified as a JWS instead.
        public static let storeKit2JWS = Self(rawValue: "storekit2_jws")
        /// ``ReceiptBuilder`` could not encode or sign what it was given.
        public static let cannotBuild = Self(rawValue: "cannot_build")
    }

    public var code: Code
    public var reason: String
    public var location: String

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        (self.code, self.reason, self.location) = (code, reason, "\(file):\(line)")
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "ReceiptError.\(code): \(reason) (\(location))" }
}
