internal import Crypto
public import WireJSON

/// Errors the gateway itself reports about a body before any adapter sees it (docs/architecture.md, "error codes").
public struct BodyError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable {
        public let rawValue: String
        public static let malformedBody = Code(rawValue: "malformed_body")
        public static let bodyTooLarge = Code(rawValue: "body_too_large")
        public static let unknownVersion = Code(rawValue: "unknown_version")
        /// Every code above.
        public static let all: [Code] = [.malformedBody, .bodyTooLarge, .unknownVersion]
    }
    public var code: Code
    public var reason: String
    public init(_ code: Code, _ reason: String) { (self.code, self.reason) = (code, reason) }
    public var description: String { "\(code.rawValue): \(reason)" }
}

/// What a body is, decided from its shape alone: `signedPayload` → V2, `notification_type` → V1. The `verify`
/// command also takes a bare signed transaction or renewal info, wrapped or as the raw JWS text.
public enum InboundBody: Sendable {
    /// The body Apple POSTs for a V2 notification: `{"signedPayload":"…"}` (a compact JWS has no character JSON
    /// would escape).
    public static func v2(signedPayload: String) -> [UInt8] { Array("{\"signedPayload\":\"\(signedPayload)\"}".utf8) }

    case v2Notification(signedPayload: [UInt8])
    case v1Notification(JSONObject)
    case signedTransaction([UInt8])
    case signedRenewalInfo([UInt8])
    /// A saved verifyReceipt answer (`verify` only): reported as outcome snapshots.
    case verifyReceiptResponse(JSONObject)

    public static let maxBytes = 1024 * 1024

    /// Classifies `bytes`. `allowBareTokens` is for `verify` only; the endpoint accepts notifications only.
    public static func classify(_ bytes: [UInt8], allowBareTokens: Bool) throws(BodyError) -> InboundBody {
        guard bytes.count <= maxBytes else { throw BodyError(.bodyTooLarge, "body larger than 1 MiB") }
        if allowBareTokens, let token = rawJWS(bytes) { return try classifyRawJWS(token) }
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            throw BodyError(.malformedBody, "body is not JSON (\(error))")
        }
        guard case .object(let o) = value else { throw BodyError(.malformedBody, "body is not a JSON object") }
        if let v = o["signedPayload"] {
            guard case .string(let s) = v else { throw BodyError(.malformedBody, "signedPayload is not a string") }
            return .v2Notification(signedPayload: Array(s.utf8))
        }
        if o["notification_type"] != nil { return .v1Notification(o) }
        if allowBareTokens {
            for (key, make) in [
                ("signedTransaction", Self.signedTransaction), ("signedTransactionInfo", Self.signedTransaction),
                ("signedRenewalInfo", Self.signedRenewalInfo),
            ] as [(String, ([UInt8]) -> InboundBody)] {
                if let v = o[key] {
                    guard case .string(let s) = v else { throw BodyError(.malformedBody, "\(key) is not a string") }
                    return make(Array(s.utf8))
                }
            }
            if o["status"] != nil, o["receipt"] != nil || o["latest_receipt_info"] != nil || o.count == 1 {
                return .verifyReceiptResponse(o)
            }
        }
        throw BodyError(.unknownVersion, "neither a V2 body (signedPayload) nor a V1 body (notification_type)")
    }

    /// The trimmed text when `bytes` look like a bare compact JWS (`eyJ…` with two dots), else nil.
    private static func rawJWS(_ bytes: [UInt8]) -> [UInt8]? {
        let ws: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
        let trimmed = Array(
            bytes.drop(while: { ws.contains($0) }).reversed().drop(while: { ws.contains($0) }).reversed()
        )
        guard trimmed.starts(with: Array("eyJ".utf8)), trimmed.filter({ $0 == UInt8(ascii: ".") }).count == 2 else {
            return nil
        }
        return trimmed
    }

    /// A raw JWS is a notification, a transaction or renewal info: the (unverified) payload's members tell which;
    /// verification then applies the matching rules, so guessing wrong can only fail, never pass.
    private static func classifyRawJWS(_ token: [UInt8]) throws(BodyError) -> InboundBody {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.count == 3, let bytes = try? Base64.decode(parts[1], alphabet: .url),
            case .object(let p)? = try? JSONParser.parse(bytes)
        {
            if p["notificationType"] != nil { return .v2Notification(signedPayload: token) }
            if p["transactionId"] != nil || p["bundleId"] != nil { return .signedTransaction(token) }
            if p["autoRenewStatus"] != nil || p["autoRenewProductId"] != nil { return .signedRenewalInfo(token) }
        }
        return .v2Notification(signedPayload: token)
    }
}
