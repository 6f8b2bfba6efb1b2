internal import ApplePKI
internal import Canonical
internal import Crypto

/// The signature policy of app receipts (docs/architecture.md, "The receipt reader"), in the spirit of the JWS path's
/// `AppleJWSVerifier` (V2Adapter): verified, never trusted.
///
/// 1. Exactly one signer, RSA (≥ 2048 bits) with SHA-1 or SHA-256, and its signature verifies over the content with
///    the embedded leaf (``CMSSignedData/verifySignature()``).
/// 2. Not an Xcode receipt (`receipt_type` Xcode, or a self-signed `CN=StoreKit` signer): those are never Apple's.
/// 3. The receipt's creation date (attribute 12) is known: the chain is judged at it (Apple's intermediates of
///    older receipts have expired since; a receipt is as good as its chain was when Apple made it).
/// 4. The leaf carries 1.2.840.113635.100.6.11.1 and is not a CA; the intermediate — the embedded certificate the
///    leaf names as issuer — carries 1.2.840.113635.100.6.2.1 and is a CA.
/// 5. Leaf → intermediate → a pinned root validates at that date (OpenSSL, RFC 5280 strict profile, only the pinned
///    root in the store: never the system store, never a root from the receipt).
/// 6. Nothing else rides along: the envelope is as Apple writes it (``ReceiptEnvelope``: the parts the signature
///    does not cover), and every embedded certificate is the leaf, that intermediate, or byte-equal to the pinned
///    root — so no byte of an authenticated receipt can change unnoticed.
/// 7. Apple Inc. Root vouches for every receipt; an extra root only for a sandbox receipt.
enum ReceiptSignaturePolicy {
    static let leafMarkerOID = AppleMarkerOID.storeKitLeaf
    static let intermediateMarkerOID = AppleMarkerOID.developerRelationsIntermediate

    /// The verdict on `cms` (parsed from `der`), the container of `receipt`.
    static func judge(
        _ cms: CMSSignedData,
        der: [UInt8],
        receipt: AppReceipt,
        trust: ReceiptTrust
    ) -> ReceiptSignature {
        typealias F = ReceiptSignature.Failure
        var verdict = ReceiptSignature(valid: false)
        let signer: CMSVerifiedSigner
        do { signer = try cms.verifySignature() } catch {
            verdict.failure = error.code == .unsupportedAlgorithm ? F.unsupportedAlgorithm : F.badSignature
            return verdict
        }
        let leaf = signer.certificate
        verdict.signer = leaf.commonName
        verdict.digest = signer.digest.rawValue
        if isXcode(receipt: receipt, signer: leaf) {
            verdict.failure = F.xcodeReceipt
            return verdict
        }
        guard ReceiptEnvelope.problem(der, leaf: leaf.der) == nil else {
            verdict.failure = F.invalidEnvelope
            return verdict
        }
        guard let created = receipt.creationDate else {
            verdict.failure = F.noCreationDate
            return verdict
        }
        verdict.judgedAt = created
        guard leaf.hasExtension(oid: leafMarkerOID) else {
            verdict.failure = F.missingAppleMarker
            return verdict
        }
        guard !leaf.isCA else {
            verdict.failure = F.invalidCertificate
            return verdict
        }
        // The intermediate: an embedded certificate, not the leaf, whose subject the leaf names as its issuer.
        let intermediates = cms.certificates.filter { $0 !== leaf && leaf.isIssued(byName: $0) && !$0.isSelfIssued }
        guard !intermediates.isEmpty else {
            verdict.failure = F.untrustedRoot
            return verdict
        }
        let seconds = created.flooredQuotient(dividingBy: 1000)
        var failure = F.untrustedRoot
        for intermediate in intermediates {
            guard intermediate.hasExtension(oid: intermediateMarkerOID) else {
                failure = F.missingAppleMarker
                continue
            }
            guard intermediate.isCA else {
                failure = F.invalidCertificate
                continue
            }
            for root in trust.roots where intermediate.isIssued(byName: root.certificate) {
                if let problem = pathFailure(leaf, intermediate, root, at: seconds) {
                    failure = problem
                    continue
                }
                // Nothing embedded but the path itself (the root, if there, exactly the pinned one).
                let stray = cms.certificates.contains { c in
                    c !== leaf && c !== intermediate && c.der != root.certificate.der
                }
                guard !stray else {
                    verdict.failure = F.unexpectedCertificate
                    return verdict
                }
                verdict.root = root.trustedForProduction ? "apple" : "extra"
                guard root.trustedForProduction || receipt.isSandbox else {
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

    /// Why leaf → intermediate → `root` does not validate at `seconds` (a ``ReceiptSignature/Failure`` value); nil
    /// when it does.
    static func pathFailure(
        _ leaf: X509Certificate,
        _ intermediate: X509Certificate,
        _ root: PinnedRoots.Root,
        at seconds: Int64
    ) -> String? {
        do {
            try root.store.validate(leaf: leaf, intermediates: [intermediate], at: seconds)
            return nil
        } catch {
            switch error.kind {
            case .untrustedIssuer: return ReceiptSignature.Failure.untrustedRoot
            case .outsideValidity: return ReceiptSignature.Failure.certificateExpired
            case .invalid: return ReceiptSignature.Failure.invalidCertificate
            }
        }
    }

    /// An Xcode (StoreKit testing) receipt: its `receipt_type`, or its signer — a self-signed `CN=StoreKit`.
    static func isXcode(receipt: AppReceipt, signer: X509Certificate?) -> Bool {
        if receipt.receiptType == "Xcode" { return true }
        guard let signer else { return false }
        return signer.isSelfIssued && signer.commonName == "StoreKit"
    }
}
