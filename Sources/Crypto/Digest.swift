internal import COpenSSL

/// SHA-256 through OpenSSL's EVP interface (SHA-NI when the CPU has it).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        let contiguous = bytes.withContiguousStorageIfAvailable { hash(UnsafeRawBufferPointer($0)) }
        return contiguous ?? Array(bytes).withUnsafeBytes { hash($0) }
    }

    public static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        // The algorithm is fetched from the provider once: OpenSSL 3.0's SHA256() and EVP_sha256() both fetch it
        // again on every call, which is measurable at three digests per notification.
        var len: UInt32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: byteCount) { out, n in
            let ok = EVP_Digest(buffer.baseAddress, buffer.count, out.baseAddress, &len, fetchedSHA256.md, nil)
            precondition(ok == 1 && len == 32, "EVP_Digest(SHA-256) cannot fail on valid input")
            n = byteCount
        }
        return out
    }

    /// Lower-case hex of the SHA-256 of `bytes`.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.encode(hash(bytes)) }
}

/// `EVP_MD_fetch(NULL, "SHA256", NULL)`, once per process; the fetched object is immutable and shared.
private struct FetchedMD: @unchecked Sendable {
    let md: OpaquePointer
}

private let fetchedSHA256: FetchedMD = {
    guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("OpenSSL has no SHA256") }
    return FetchedMD(md: md)
}()

/// HMAC-SHA256 (Standard Webhooks signatures).
public enum HMACSHA256 {
    public static func authenticationCode(key: [UInt8], message: some Sequence<UInt8>) -> [UInt8] {
        // RFC 2104 §2: a key longer than the 64-byte block is replaced by its hash, which HMAC() would do itself.
        // Doing it here means OpenSSL's `int` key length never sees a count that does not fit.
        let key = key.count > 64 ? SHA256.hash(key) : key
        let msg = Array(message)
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        let p = key.withUnsafeBufferPointer { k in
            msg.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &len)
                }
            }
        }
        precondition(p != nil && len == 32, "HMAC-SHA256 cannot fail on valid input")
        return out
    }
}

/// Constant-time comparison and hex.
public enum Bytes {
    /// Compares in time that depends only on the lengths, never on where the first difference is.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) }
        } == 0
    }

    /// Cryptographically secure random bytes.
    public static func random(count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(rc == 1, "RAND_bytes failed")
        return out
    }
}

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
