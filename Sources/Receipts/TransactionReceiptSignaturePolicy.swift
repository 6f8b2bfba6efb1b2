internal import ApplePKI
internal import Canonical
internal import Crypto

/// The signature policy of iOS 6 transaction receipts (docs/architecture.md, "The receipt reader"): what Apple's own
/// 2012 sample checked on the device, applied as ``ReceiptSignaturePolicy`` applies its rules to app receipts —
/// verified, never trusted.
///
/// 1. The `signature` blob reads (``TransactionReceiptSignature``): version 2 or 3, a signature of the version's length,
///    a certificate length equal to what follows, a DER leaf.
/// 2. The leaf's key is RSA of the version's size (1024 bits for 2, 2048 for 3), and the signature verifies with it:
///    PKCS#1 v1.5, SHA-1, over the version byte followed by the decoded `purchase-info`.
/// 3. The purchase date (`purchase-date-ms`, else `purchase-date`) is known: the chain is judged at it, as Apple's
///    sample did (the certificates of these receipts have all expired since).
/// 4. The leaf carries the version's marker (2: 1.2.840.113635.100.6.5.1; 3: 1.2.840.113635.100.6.11.1) and is no CA.
///    The blob carries the leaf alone: the intermediate is one ``ReceiptTrust`` holds (Apple's embedded iTunes Store
///    CA and WWDR CAs, or a test one) whose subject the leaf names as its issuer; it carries the version's marker (2:
///    1.2.840.113635.100.6.2.2; 3: 1.2.840.113635.100.6.2.1) and is a CA.
/// 5. Leaf → intermediate → a pinned root validates at the purchase date (``X509TrustStore``, as for app receipts).
/// 6. Apple Inc. Root vouches for every receipt; an extra root only for a sandbox one.
///
/// The signature covers `purchase-info` alone, and everything the gateway takes from the receipt comes from it — the
/// ids, the bundle, the dates, verifyReceipt's `receipt` object — except the outer `environment`, which only says
/// where to look (docs/threat-model.md).
enum TransactionReceiptSignaturePolicy {
    /// What one version requires of its certificates.
    struct Profile {
        let keyBits: Int
        let leafMarkerOID: String
        let intermediateMarkerOID: String
    }

    /// Version 2: `PurchaseReceiptCertificate` under Apple iTunes Store Certification Authority.
    static let version2 = Profile(
        keyBits: 1024,
        leafMarkerOID: AppleMarkerOID.iTunesStoreLeaf,
        intermediateMarkerOID: AppleMarkerOID.iTunesStoreIntermediate
    )
    /// Version 3: the app receipts' leaf under Apple Worldwide Developer Relations CA.
    static let version3 = Profile(
        keyBits: 2048,
        leafMarkerOID: ReceiptSignaturePolicy.leafMarkerOID,
        intermediateMarkerOID: ReceiptSignaturePolicy.intermediateMarkerOID
    )

    /// The verdict on a transaction receipt: `signature` is the outer property list's `signature` text (base64),
    /// `purchaseInfo` the decoded bytes of its `purchase-info`, `transaction` what was read from them.
    static func judge(
        signature text: String?,
        purchaseInfo: [UInt8],
        transaction: TransactionReceipt,
        trust: ReceiptTrust
    ) -> ReceiptSignature {
        typealias F = ReceiptSignature.Failure
        var verdict = ReceiptSignature(valid: false)
        guard let text, !text.isEmpty else {
            verdict.failure = F.unsigned
            return verdict
        }
        guard case .bytes(let blob)? = try? ReceiptInput.decode(Array(text.utf8), maxBytes: text.utf8.count) else {
            verdict.failure = F.malformedSignature
            return verdict
        }
        let parsed: TransactionReceiptSignature
        do { parsed = try TransactionReceiptSignature.parse(blob) } catch {
            verdict.failure = error.failure
            return verdict
        }
        let leaf = parsed.leaf
        verdict.signer = leaf.commonName
        let profile = parsed.version == 2 ? version2 : version3
        guard let key = try? leaf.publicKey(), key.rsaBits == profile.keyBits else {
            verdict.failure = F.unsupportedAlgorithm
            return verdict
        }
        verdict.digest = CMSDigest.sha1.rawValue
        let signed = TransactionReceiptSignature.signedBytes(version: parsed.version, purchaseInfo: purchaseInfo)
        guard key.verifyRSASHA1(signature: parsed.signature, message: signed) else {
            verdict.failure = F.badSignature
            return verdict
        }
        guard let purchased = transaction.purchaseDate else {
            verdict.failure = F.noPurchaseDate
            return verdict
        }
        verdict.judgedAt = purchased
        guard leaf.hasExtension(oid: profile.leafMarkerOID) else {
            verdict.failure = F.missingAppleMarker
            return verdict
        }
        guard !leaf.isCA else {
            verdict.failure = F.invalidCertificate
            return verdict
        }
        let intermediates = trust.transactionIntermediates.filter { leaf.isIssued(byName: $0) }
        let seconds = purchased.flooredQuotient(dividingBy: 1000)
        var failure = F.untrustedRoot
        for intermediate in intermediates {
            guard intermediate.hasExtension(oid: profile.intermediateMarkerOID) else {
                failure = F.missingAppleMarker
                continue
            }
            guard intermediate.isCA else {
                failure = F.invalidCertificate
                continue
            }
            for root in trust.roots where intermediate.isIssued(byName: root.certificate) {
                if let problem = ReceiptSignaturePolicy.pathFailure(leaf, intermediate, root, at: seconds) {
                    failure = problem
                    continue
                }
                verdict.root = root.trustedForProduction ? "apple" : "extra"
                guard root.trustedForProduction || transaction.isSandbox else {
                    verdict.failure = F.sandboxOnlyRoot
                    return verdict
                }
                verdict.valid = true
                return verdict
            }
        }
        verdict.failure = failure
        return verdict
    }
}
