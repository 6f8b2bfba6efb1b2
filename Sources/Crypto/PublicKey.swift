internal import COpenSSL
import Synchronization
internal import Threads

/// An EC public key (`EVP_PKEY`). The key is immutable after creation and OpenSSL allows concurrent verification
/// with one key; the only mutable state is pools of initialized verify contexts, each behind a `Mutex` — hence
/// `@unchecked Sendable`.
public final class PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// Curve name, read once (nil for a non-EC key).
    public let curveName: String?
    /// Verify contexts already past `EVP_PKEY_verify_init`: in OpenSSL 3.0 that call fetches the algorithm from
    /// the provider, which costs about as much as half a P-256 verify. A context serves one thread at a time. One
    /// pool per thread stripe: every handler thread verifies with the same leaf key, and one lock made them queue.
    private let pools = Striped<[VerifyContext]>(count: 8) { [] }
    private static let maxPooledContextsPerStripe = 2

    /// Takes ownership of one reference to `pkey`.
    init(owning pkey: OpaquePointer) {
        self.pkey = pkey
        self.curveName = Self.readCurveName(pkey)
    }

    deinit {
        pools.withEach { idle in for c in idle { EVP_PKEY_CTX_free(c.ctx) } }
        EVP_PKEY_free(pkey)
    }

    /// Decodes a DER `SubjectPublicKeyInfo`.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p = buf.baseAddress
            return d2i_PUBKEY(nil, &p, buf.count)
        }
        guard let key else { throw CryptoError(.invalidKey, "not a DER SubjectPublicKeyInfo") }
        self.init(owning: key)
    }

    /// The DER `SubjectPublicKeyInfo` of this key.
    public var subjectPublicKeyInfo: [UInt8] {
        let n = i2d_PUBKEY(pkey, nil)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(n))
        out.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_PUBKEY(pkey, &p)
        }
        return out
    }

    private static func readCurveName(_ pkey: OpaquePointer) -> String? {
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &len) == 1 else { return nil }
        return String(decoding: name.prefix(len).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True for an EC key on NIST P-256, the only key ES256 allows.
    public var isP256: Bool { curveName == "prime256v1" }

    /// Verifies a JWS ES256 signature: raw 64-byte `R‖S` over the SHA-256 of `message`.
    /// Any other length (a DER signature, a truncated one) is a failure, never an error.
    public func verifyES256(signature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == 64, isP256 else { return false }
        guard let der = ECDSASignature.der(fromRaw: signature) else { return false }
        return verify(digest: SHA256.hash(message), derSignature: der)
    }

    /// Verifies a DER ECDSA signature over a precomputed digest (what `openssl speed ecdsap256` measures).
    public func verify(digest: [UInt8], derSignature: [UInt8]) -> Bool {
        guard let ctx = pools.withOwn({ $0.popLast()?.ctx }) ?? newContext() else { return false }
        let rc = derSignature.withUnsafeBufferPointer { s in
            digest.withUnsafeBufferPointer { d in EVP_PKEY_verify(ctx, s.baseAddress, s.count, d.baseAddress, d.count) }
        }
        if rc != 1 { ERR_clear_error() }
        let keep = pools.withOwn { pool in
            guard pool.count < Self.maxPooledContextsPerStripe else { return false }
            pool.append(VerifyContext(ctx: ctx))
            return true
        }
        if !keep { EVP_PKEY_CTX_free(ctx) }
        return rc == 1
    }

    private func newContext() -> OpaquePointer? {
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { return nil }
        guard EVP_PKEY_verify_init(ctx) == 1 else {
            ERR_clear_error()
            EVP_PKEY_CTX_free(ctx)
            return nil
        }
        return ctx
    }
}

/// An `EVP_PKEY_CTX*` parked in the pool: owned by the pool while there, by one thread while in use.
private struct VerifyContext: @unchecked Sendable {
    let ctx: OpaquePointer
}

/// A verification context bound to one key, reused across calls: the loop `openssl speed` runs. Not thread-safe
/// (one per thread); used by the benchmarks to measure libcrypto's own bound in the same process.
public final class ReusableVerifyContext {
    private let key: PublicKey
    private let ctx: OpaquePointer

    /// `digestIsSHA256`: the signature is PKCS#1 v1.5 over a SHA-256 digest (an RSA key: the digest is wrapped in
    /// its DigestInfo before comparing); ECDSA verifies a digest without being told which.
    public init(key: PublicKey, digestIsSHA256: Bool = false) throws(CryptoError) {
        guard let ctx = EVP_PKEY_CTX_new(key.pkey, nil), EVP_PKEY_verify_init(ctx) == 1 else {
            throw CryptoError(.internalFailure, "EVP_PKEY_verify_init failed")
        }
        if digestIsSHA256, EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1 {
            EVP_PKEY_CTX_free(ctx)
            throw CryptoError(.internalFailure, "EVP_PKEY_CTX_set_signature_md failed")
        }
        (self.key, self.ctx) = (key, ctx)
    }
    deinit { EVP_PKEY_CTX_free(ctx) }

    public func verify(digest: [UInt8], derSignature: [UInt8]) -> Bool {
        withExtendedLifetime(key) {
            derSignature.withUnsafeBufferPointer { s in
                digest.withUnsafeBufferPointer { d in
                    EVP_PKEY_verify(ctx, s.baseAddress, s.count, d.baseAddress, d.count)
                }
            } == 1
        }
    }
}

/// Conversions between JWS raw `R‖S` and DER `ECDSA-Sig-Value` for P-256.
public enum ECDSASignature {
    /// DER `SEQUENCE { r INTEGER, s INTEGER }` from 64 raw bytes; nil when r or s is zero.
    public static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        // Minimal INTEGER encodings: leading zeros dropped, one 0x00 added when the high bit is set.
        var rStart = 0
        while rStart < 32, raw[rStart] == 0 { rStart += 1 }
        var sStart = 32
        while sStart < 64, raw[sStart] == 0 { sStart += 1 }
        guard rStart < 32, sStart < 64 else { return nil }
        let rPad = raw[rStart] & 0x80 != 0 ? 1 : 0
        let sPad = raw[sStart] & 0x80 != 0 ? 1 : 0
        let rLen = 32 - rStart + rPad
        let sLen = 64 - sStart + sPad
        var out = [UInt8]()
        out.reserveCapacity(6 + rLen + sLen)
        out.append(0x30)
        out.append(UInt8(4 + rLen + sLen))
        out.append(0x02)
        out.append(UInt8(rLen))
        if rPad == 1 { out.append(0) }
        out.append(contentsOf: raw[rStart..<32])
        out.append(0x02)
        out.append(UInt8(sLen))
        if sPad == 1 { out.append(0) }
        out.append(contentsOf: raw[sStart..<64])
        return out
    }

    /// Raw 64-byte `R‖S` from a DER signature of a P-256 key.
    public static func raw(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        var consumed = 0
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return nil }
            var p: UnsafePointer<UInt8>? = base
            let s = d2i_ECDSA_SIG(nil, &p, buf.count)
            consumed = p.map { $0 - base } ?? 0
            return s
        }
        ERR_clear_error()
        guard let sig else { throw CryptoError(.invalidSignature, "not a DER ECDSA signature") }
        guard consumed == der.count else {
            ECDSA_SIG_free(sig)
            throw CryptoError(.invalidSignature, "trailing bytes after the DER signature")
        }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig) else { return false }
            return BN_bn2binpad(r, o.baseAddress, 32) == 32 && BN_bn2binpad(s, o.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw CryptoError(.invalidSignature, "signature integers do not fit P-256") }
        return out
    }
}
