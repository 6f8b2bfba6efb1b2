public import Crypto
public import Receipts

/// iOS 6 transaction receipts as Apple wrote them (docs/architecture.md, "The receipt reader"), for tests and the
/// fuzz target: `purchase-info` and the outer property list in Apple's layout (a tab before each `"key" = "value";`
/// line), the `signature` blob over `purchase-info` in Apple's format (``TransactionReceiptSignature``). Signed by a
/// test chain they are valid only where its root is an extra (sandbox) root and its intermediate is known to the
/// ``ReceiptTrust``: the blob carries the leaf alone.
extension ReceiptBuilder {
    /// `fields` as the text of a `purchase-info`: `{`, one `\t"key" = "value";` line each, `}`.
    public static func purchaseInfo(_ fields: [TransactionReceipt.PurchaseInfoField]) -> [UInt8] {
        plist(fields.map { ($0.key, $0.value) })
    }

    /// The `signature` blob over `purchaseInfo` (its decoded bytes): signed with `leafKey` (RSA PKCS#1 v1.5, SHA-1),
    /// `leaf` embedded; version 2 for a 1024-bit key, 3 for a 2048-bit one, as Apple's. Throws `cannotBuild` for any
    /// other key, or a key that is not the leaf's.
    public static func transactionSignature(
        purchaseInfo: [UInt8],
        leafKey: PrivateKey,
        leaf: X509Certificate
    ) throws(ReceiptError) -> [UInt8] {
        let version: UInt8
        switch try? leaf.publicKey().rsaBits {
        case 1024: version = 2
        case 2048: version = 3
        default: throw ReceiptError(.cannotBuild, "a transaction receipt's leaf key is RSA 1024 or 2048")
        }
        guard leafKey.publicKey.subjectPublicKeyInfo == (try? leaf.publicKey().subjectPublicKeyInfo) else {
            throw ReceiptError(.cannotBuild, "the key is not the leaf's")
        }
        let signature: [UInt8]
        do {
            signature = try leafKey.signRSASHA1(
                TransactionReceiptSignature.signedBytes(version: version, purchaseInfo: purchaseInfo)
            )
        } catch { throw ReceiptError(.cannotBuild, "signing: \(error.reason)") }
        return TransactionReceiptSignature.encode(version: version, signature: signature, leaf: leaf.der)
    }

    /// The property-list text of a transaction receipt (base64 it for `receipt-data`: ``base64(_:)``): `signature`
    /// (base64 of the blob) when given, `purchase-info` (base64 of its text), `environment` when given, then `pod`
    /// "100" and `signing-status` "0" as Apple wrote them.
    public static func transactionReceipt(
        purchaseInfo: [UInt8],
        signature: [UInt8]?,
        environment: String?
    ) -> [UInt8] {
        var entries: [(String, String)] = []
        if let signature { entries.append(("signature", base64(signature))) }
        entries.append(("purchase-info", base64(purchaseInfo)))
        if let environment { entries.append(("environment", environment)) }
        entries += [("pod", "100"), ("signing-status", "0")]
        return plist(entries)
    }

    /// `fields` as a transaction receipt signed with `pki`'s leaf (its size picks the version: a PKI of profile
    /// ``GeneratedReceiptPKI/Profile/iTunesStore`` makes version 2, one of ``GeneratedReceiptPKI/Profile/appReceipt``
    /// version 3): the property-list text.
    public static func transactionReceipt(
        _ fields: [TransactionReceipt.PurchaseInfoField],
        environment: String? = "Sandbox",
        pki: GeneratedReceiptPKI
    ) throws(ReceiptError) -> [UInt8] {
        let info = purchaseInfo(fields)
        let signature = try transactionSignature(purchaseInfo: info, leafKey: pki.leafKey, leaf: pki.leaf)
        return transactionReceipt(purchaseInfo: info, signature: signature, environment: environment)
    }

    /// `{`, one `\t"key" = "value";` line per entry (`"` and `\` escaped), `}`.
    static func plist(_ entries: [(String, String)]) -> [UInt8] {
        func quoted(_ s: String) -> String {
            var out = "\""
            for c in s.unicodeScalars {
                switch c {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                default: out.unicodeScalars.append(c)
                }
            }
            return out + "\""
        }
        let lines = entries.map { "\t\(quoted($0.0)) = \(quoted($0.1));" }
        return Array((["{"] + lines + ["}"]).joined(separator: "\n").utf8)
    }
}
