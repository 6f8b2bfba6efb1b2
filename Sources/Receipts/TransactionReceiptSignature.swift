internal import Crypto

/// The `signature` of an iOS 6 transaction receipt, in Apple's own format (docs/architecture.md, "The receipt
/// reader"): one version byte; an RSA PKCS#1 v1.5 signature with SHA-1 over the version byte followed by the decoded
/// `purchase-info` bytes; the length of the signer's certificate (4 bytes, big-endian); that certificate (DER), to the
/// last byte of the blob.
///
/// | version | signature | leaf (its key), issued by |
/// |---|---|---|
/// | 2 | 128 bytes | `PurchaseReceiptCertificate` (RSA 1024), by Apple iTunes Store Certification Authority |
/// | 3 | 256 bytes | the app receipts' leaf (RSA 2048), by Apple Worldwide Developer Relations CA |
package struct TransactionReceiptSignature {
    let version: UInt8
    let signature: [UInt8]
    let leaf: X509Certificate

    /// The bytes the signature covers: the version byte, then `purchase-info` as decoded from its base64.
    package static func signedBytes(version: UInt8, purchaseInfo: [UInt8]) -> [UInt8] { [version] + purchaseInfo }

    /// The signature's length in bytes (the leaf key's modulus) for `version`; nil for a version Apple never wrote.
    static func signatureLength(version: UInt8) -> Int? {
        switch version {
        case 2: 128
        case 3: 256
        default: nil
        }
    }

    /// Why a blob does not read: the ``ReceiptSignature/Failure`` value to report.
    struct Unreadable: Error {
        let failure: String
    }

    /// Reads `blob`: a version of ``signatureLength(version:)``, a signature of that length, a certificate length
    /// equal to what follows it, and a DER certificate. Nothing may follow the certificate.
    static func parse(_ blob: [UInt8]) throws(Unreadable) -> TransactionReceiptSignature {
        guard let version = blob.first else { throw Unreadable(failure: ReceiptSignature.Failure.malformedSignature) }
        guard let length = signatureLength(version: version) else {
            throw Unreadable(failure: ReceiptSignature.Failure.unsupportedAlgorithm)
        }
        let start = 1 + length + 4
        guard blob.count > start else { throw Unreadable(failure: ReceiptSignature.Failure.malformedSignature) }
        let declared = blob[(1 + length)..<start].reduce(0) { $0 << 8 | Int($1) }
        guard declared == blob.count - start,
            let leaf = try? X509Certificate(der: Array(blob[start...]))
        else { throw Unreadable(failure: ReceiptSignature.Failure.malformedSignature) }
        return TransactionReceiptSignature(version: version, signature: Array(blob[1..<(1 + length)]), leaf: leaf)
    }

    /// The blob of `signature` by `leaf` (DER) under `version`: what ``parse(_:)`` reads.
    package static func encode(version: UInt8, signature: [UInt8], leaf: [UInt8]) -> [UInt8] {
        let n = UInt32(truncatingIfNeeded: leaf.count)
        return [version] + signature + [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            + leaf
    }
}
