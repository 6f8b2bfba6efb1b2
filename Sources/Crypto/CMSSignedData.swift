internal import COpenSSL

/// A digest a CMS signer may use: the two App Store receipts are signed with (SHA-1 until about 2021, SHA-256 since).
public enum CMSDigest: String, Sendable, Hashable {
    case sha1
    case sha256
}

/// The signer of a ``CMSSignedData`` whose signature verified: which embedded certificate's key it was and how it
/// was made. Only a signature is proved here; whether that certificate is trusted is the caller's decision
/// (``X509TrustStore``).
public struct CMSVerifiedSigner: Sendable {
    /// The embedded certificate whose public key verified the signature.
    public let certificate: X509Certificate
    /// The digest of the signature.
    public let digest: CMSDigest
    /// The signer key's size in bits (RSA, at least 2048).
    public let keyBits: Int
}

/// A parsed CMS (PKCS#7) `SignedData` with its content embedded: what an App Store app receipt is (docs/architecture.md,
/// "The receipt reader"). DER and BER are both read — Xcode's StoreKit receipts use indefinite lengths and a
/// constructed OCTET STRING around the content, which OpenSSL's decoder collects into one string.
///
/// Parsing only reads; ``verifySignature()`` proves the one signer's RSA signature over the content with the signer's
/// embedded certificate and nothing else (no chain, no store, no time: the signer's certificate is judged by the
/// caller, with ``X509TrustStore`` at a time of its choosing). Not thread-safe (`CMS_ContentInfo` caches the signer
/// it found): one reader owns one instance.
public final class CMSSignedData {
    private let cms: OpaquePointer
    /// The embedded content (`encapContentInfo.eContent`, flattened when it was a constructed OCTET STRING).
    public let content: [UInt8]
    /// The certificates embedded in the `certificates` field, in their order.
    public let certificates: [X509Certificate]
    /// How many `SignerInfo`s the structure holds.
    public let signerCount: Int

    /// Parses `der` (DER or BER): a `ContentInfo` of type signedData whose encapsulated content is of type data and
    /// embedded. Trailing bytes after the structure are refused. Throws ``CryptoError/Code/invalidCMS`` otherwise.
    public init(der: [UInt8]) throws(CryptoError) {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return nil }
            var p: UnsafePointer<UInt8>? = base
            let c = d2i_CMS_ContentInfo(nil, &p, buf.count)
            consumed = p.map { $0 - base } ?? 0
            return c
        }
        ERR_clear_error()
        guard let cms = parsed else { throw CryptoError(.invalidCMS, "not a DER or BER CMS ContentInfo") }
        // From here on `cms` is freed by `deinit` once `self.cms` is set, or here on the way out.
        var ok = false
        defer { if !ok { CMS_ContentInfo_free(cms) } }
        guard consumed == der.count else { throw CryptoError(.invalidCMS, "trailing bytes after the ContentInfo") }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed else {
            throw CryptoError(.invalidCMS, "content type is not signedData")
        }
        guard OBJ_obj2nid(CMS_get0_eContentType(cms)) == NID_pkcs7_data else {
            throw CryptoError(.invalidCMS, "encapsulated content type is not data")
        }
        guard let slot = CMS_get0_content(cms), let octets = slot.pointee else {
            throw CryptoError(.invalidCMS, "content is not embedded (detached signature)")
        }
        let length = Int(ASN1_STRING_length(octets))
        var bytes: [UInt8] = []
        if length > 0, let data = ASN1_STRING_get0_data(octets) {
            bytes = Array(UnsafeBufferPointer(start: data, count: length))
        }
        var certificates: [X509Certificate] = []
        if let stack = CMS_get1_certs(cms) {
            // The stack holds one reference per certificate for us: each is handed to an `X509Certificate`.
            var taken: [OpaquePointer] = []
            let count = gateway_sk_X509_num(stack)
            for i in 0..<max(count, 0) {
                if let c = gateway_sk_X509_value(stack, i) { taken.append(c) }
            }
            gateway_sk_X509_free(stack)
            var failure: CryptoError?
            for c in taken {
                if failure != nil {
                    X509_free(c)
                    continue
                }
                do { certificates.append(try X509Certificate(taking: c)) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        let signers = CMS_get0_SignerInfos(cms).map { Int(gateway_sk_CMS_SignerInfo_num($0)) } ?? 0
        ERR_clear_error()
        (self.cms, self.content, self.certificates, self.signerCount) = (cms, bytes, certificates, max(signers, 0))
        ok = true
    }

    deinit { CMS_ContentInfo_free(cms) }

    /// Proves the signature of the one `SignerInfo` over ``content``: exactly one signer, a SHA-1 or SHA-256 digest,
    /// an RSA PKCS#1 v1.5 signature (`rsaEncryption`, or `sha1WithRSAEncryption` / `sha256WithRSAEncryption`
    /// matching the digest), a signer certificate among ``certificates`` with an RSA key of at least 2048 bits.
    /// Signed attributes, where present, are checked too (their message digest against the content). The
    /// certificate's own validity and issuer are NOT judged here.
    ///
    /// Throws ``CryptoError/Code/unsupportedAlgorithm`` for anything outside that profile,
    /// ``CryptoError/Code/badSignature`` when the signature does not verify or its certificate is not embedded.
    public func verifySignature() throws(CryptoError) -> CMSVerifiedSigner {
        defer { ERR_clear_error() }
        guard signerCount == 1, let infos = CMS_get0_SignerInfos(cms),
            let info = gateway_sk_CMS_SignerInfo_value(infos, 0)
        else { throw CryptoError(.unsupportedAlgorithm, "\(signerCount) signers, not one") }
        var digestNID: Int32 = NID_undef
        var signatureNID: Int32 = NID_undef
        var key: OpaquePointer?
        var signer: OpaquePointer?
        gateway_cms_signer_info(info, &digestNID, &signatureNID, &key, &signer)
        let digest: CMSDigest
        switch digestNID {
        case NID_sha1: digest = .sha1
        case NID_sha256: digest = .sha256
        default: throw CryptoError(.unsupportedAlgorithm, "signer digest is neither SHA-1 nor SHA-256")
        }
        switch (signatureNID, digest) {
        case (NID_rsaEncryption, _), (NID_sha1WithRSAEncryption, .sha1), (NID_sha256WithRSAEncryption, .sha256): break
        default: throw CryptoError(.unsupportedAlgorithm, "signature algorithm is not RSA with the signer's digest")
        }
        // Finds each signer's certificate among the embedded ones (issuer and serial, or subject key identifier).
        guard CMS_set1_signers_certs(cms, nil, 0) >= 0 else {
            throw CryptoError(.badSignature, "signer certificate lookup failed")
        }
        gateway_cms_signer_info(info, &digestNID, &signatureNID, &key, &signer)
        guard let key, let signer else { throw CryptoError(.badSignature, "the signer's certificate is not embedded") }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            throw CryptoError(.unsupportedAlgorithm, "signer key is not RSA")
        }
        let bits = Int(EVP_PKEY_get_bits(key))
        guard bits >= 2048 else { throw CryptoError(.unsupportedAlgorithm, "RSA key of \(bits) bits") }
        guard let certificate = certificates.first(where: { $0.x509 == signer || X509_cmp($0.x509, signer) == 0 })
        else { throw CryptoError(.badSignature, "the signer's certificate is not embedded") }
        // The signature only: no chain (CMS_NO_SIGNER_CERT_VERIFY), content as bytes (CMS_BINARY: no MIME
        // canonicalisation), the content read from the structure and discarded.
        let flags = UInt32(CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY)
        guard CMS_verify(cms, nil, nil, nil, nil, flags) == 1 else {
            throw CryptoError(.badSignature, "signature does not verify: \(CryptoError.drainOpenSSLErrors())")
        }
        return CMSVerifiedSigner(certificate: certificate, digest: digest, keyBits: bits)
    }

    /// A DER `ContentInfo` holding a `SignedData` over `content`, embedded, signed by `signer` with `key` (RSA) as
    /// App Store receipts are: one signer identified by issuer and serial number, no signed attributes, the
    /// `rsaEncryption` signature algorithm, `digest` as given; the certificates field holds `signer` and `chain`
    /// (sorted by their encodings, as DER sorts a SET). For tests and the simulator; the product never signs
    /// receipts.
    public static func sign(
        content: [UInt8],
        signer: X509Certificate,
        key: PrivateKey,
        chain: [X509Certificate],
        digest: CMSDigest
    ) throws(CryptoError) -> [UInt8] {
        defer { ERR_clear_error() }
        guard let length = Int32(exactly: content.count) else {
            throw CryptoError(.invalidArgument, "content too large to sign")
        }
        let matches = withExtendedLifetime((signer, key)) { X509_check_private_key(signer.x509, key.pkey) == 1 }
        guard matches else { throw CryptoError(.invalidKey, "key does not match the signer certificate") }
        let flags = UInt32(CMS_BINARY | CMS_PARTIAL | CMS_NOSMIMECAP | CMS_NOATTR)
        guard let cms = CMS_sign(nil, nil, nil, nil, flags) else { throw CryptoError(.internalFailure, "CMS_sign") }
        defer { CMS_ContentInfo_free(cms) }
        let md = digest == .sha1 ? EVP_sha1() : EVP_sha256()
        let added = withExtendedLifetime((signer, key)) { CMS_add1_signer(cms, signer.x509, key.pkey, md, flags) }
        guard added != nil else {
            throw CryptoError(.invalidKey, "CMS_add1_signer: \(CryptoError.drainOpenSSLErrors())")
        }
        for certificate in chain {
            let ok = withExtendedLifetime(certificate) { CMS_add1_cert(cms, certificate.x509) }
            guard ok == 1 else { throw CryptoError(.internalFailure, "CMS_add1_cert") }
        }
        // An empty array may have no base address: a one-byte stand-in, of which `length` (0) bytes are read.
        let source = content.isEmpty ? [0] : content
        let finished: Int32 = source.withUnsafeBufferPointer { buf in
            guard let bio = BIO_new_mem_buf(buf.baseAddress, length) else { return 0 }
            defer { BIO_free(bio) }
            return CMS_final(cms, bio, nil, flags)
        }
        guard finished == 1 else {
            throw CryptoError(.internalFailure, "CMS_final: \(CryptoError.drainOpenSSLErrors())")
        }
        let n = i2d_CMS_ContentInfo(cms, nil)
        guard n > 0 else { throw CryptoError(.internalFailure, "i2d_CMS_ContentInfo") }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_CMS_ContentInfo(cms, &p)
        }
        return der
    }
}
