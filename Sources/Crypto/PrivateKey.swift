internal import COpenSSL

/// A private key: P-256 for ES256 signing (App Store Server API tokens, the simulator's test PKI, test vectors), P-384
/// for the test CAs, RSA for the receipt-signing test PKI (``CMSSignedData/sign(content:signer:key:chain:digest:)``).
/// Signing with one `EVP_PKEY` from several threads is allowed by OpenSSL; the key is never mutated.
public final class PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }

    /// A fresh key on P-256 (`prime256v1`).
    public static func generateP256() throws(CryptoError) -> PrivateKey {
        try generate(curve: "P-256")
    }

    /// A fresh key on P-384 (CA keys of the Apple-shaped test PKI).
    public static func generateP384() throws(CryptoError) -> PrivateKey {
        try generate(curve: "P-384")
    }

    /// A fresh RSA key of `bits` bits (public exponent 65537), 1024 to 8192: 2048 is the size of Apple's
    /// receipt-signing keys, 1024 that of the leaf of version-2 iOS 6 transaction receipts (a test chain that signs
    /// them needs one; the product never signs). Generation takes tens to hundreds of milliseconds.
    public static func generateRSA(bits: Int = 2048) throws(CryptoError) -> PrivateKey {
        guard (1024...8192).contains(bits) else { throw CryptoError(.invalidArgument, "RSA keys of 1024 to 8192 bits") }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError(.internalFailure, "RSA keygen context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1 else {
            throw CryptoError(.internalFailure, "RSA keygen init")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw CryptoError(.internalFailure, "RSA keygen") }
        return PrivateKey(owning: key)
    }

    /// True for an RSA key.
    public var isRSA: Bool { EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA }

    private static func generate(curve: String) throws(CryptoError) -> PrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError(.internalFailure, "EC keygen context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1 else { throw CryptoError(.internalFailure, "keygen init") }
        let nid = curve == "P-256" ? NID_X9_62_prime256v1 : NID_secp384r1
        guard EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, nid) == 1 else {
            throw CryptoError(.internalFailure, "curve")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw CryptoError(.internalFailure, "keygen") }
        return PrivateKey(owning: key)
    }

    /// Reads a PEM private key (PKCS#8 `PRIVATE KEY`, as in an App Store Connect `.p8`, or SEC1 `EC PRIVATE KEY`).
    /// The error never repeats the key text.
    public convenience init(pem: String) throws(CryptoError) {
        self.init(owning: try Self.read(pem: pem, type: EVP_PKEY_EC, what: "EC"))
    }

    /// Reads a PEM RSA private key (PKCS#8 `PRIVATE KEY`): a receipt-signing key of a test or simulator PKI
    /// (``pemPKCS8`` of ``generateRSA(bits:)``). The error never repeats the key text.
    public convenience init(rsaPEM pem: String) throws(CryptoError) {
        self.init(owning: try Self.read(pem: pem, type: EVP_PKEY_RSA, what: "RSA"))
    }

    /// The key of PEM text, when it is of `type`.
    private static func read(pem: String, type: Int32, what: String) throws(CryptoError) -> OpaquePointer {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            // OpenSSL takes an `int` length: text past 2 GiB is no key, and must not trap the conversion.
            guard let length = Int32(exactly: buf.count), let bio = BIO_new_mem_buf(buf.baseAddress, length) else {
                return nil
            }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let key, EVP_PKEY_get_base_id(key) == type else {
            if let key { EVP_PKEY_free(key) }
            throw CryptoError(.invalidKey, "not a PEM \(what) private key")
        }
        return key
    }

    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `.p8` format.
    public var pemPKCS8: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { return "" }
        var ptr: UnsafeMutablePointer<CChar>?
        let n = gateway_bio_get_mem_data(bio, &ptr)
        guard n > 0, let ptr else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: ptr, count: n), as: UTF8.self)
    }

    /// The matching public key.
    public var publicKey: PublicKey {
        // Round-trip through DER SubjectPublicKeyInfo: yields an independent public-only EVP_PKEY.
        let n = i2d_PUBKEY(pkey, nil)
        var der = [UInt8](repeating: 0, count: Int(max(n, 0)))
        der.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_PUBKEY(pkey, &p)
        }
        // A key we just encoded always decodes.
        return try! PublicKey(subjectPublicKeyInfo: der)
    }

    /// Signs `message` with ECDSA over SHA-256 (P-256) or SHA-384 (P-384) and returns the DER signature.
    public func signDER(_ message: some Sequence<UInt8>, sha384: Bool = false) throws(CryptoError) -> [UInt8] {
        try sign(Array(message), digest: sha384 ? EVP_sha384() : EVP_sha256(), rsaPKCS1: false)
    }

    /// Signs `message` with RSA PKCS#1 v1.5 over SHA-1 (an RSA key): the signature of an iOS 6 transaction receipt
    /// (``PublicKey/verifyRSASHA1(signature:message:)``), for the test chains that make them. The product never signs.
    public func signRSASHA1(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard isRSA else { throw CryptoError(.invalidKey, "not an RSA key") }
        return try sign(message, digest: EVP_sha1(), rsaPKCS1: true)
    }

    private func sign(_ msg: [UInt8], digest: OpaquePointer?, rsaPKCS1: Bool) throws(CryptoError) -> [UInt8] {
        guard let md = EVP_MD_CTX_new() else { throw CryptoError(.internalFailure, "digest context") }
        defer { EVP_MD_CTX_free(md) }
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(md, &pctx, digest, nil, pkey) == 1 else {
            throw CryptoError(.invalidKey, "DigestSignInit: \(CryptoError.drainOpenSSLErrors())")
        }
        if rsaPKCS1, EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1 {
            throw CryptoError(.internalFailure, "RSA padding: \(CryptoError.drainOpenSSLErrors())")
        }
        var len = 0
        guard msg.withUnsafeBufferPointer({ EVP_DigestSign(md, nil, &len, $0.baseAddress, $0.count) }) == 1 else {
            throw CryptoError(.internalFailure, "DigestSign size")
        }
        var sig = [UInt8](repeating: 0, count: len)
        let rc = sig.withUnsafeMutableBufferPointer { s in
            msg.withUnsafeBufferPointer { m in EVP_DigestSign(md, s.baseAddress, &len, m.baseAddress, m.count) }
        }
        guard rc == 1 else { throw CryptoError(.internalFailure, "DigestSign") }
        return Array(sig.prefix(len))
    }

    /// A JWS ES256 signature: raw 64-byte `R‖S` over SHA-256 of `message`.
    public func signES256(_ message: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        try ECDSASignature.raw(fromDER: signDER(message))
    }
}
