/// Strict base64 codecs (RFC 4648). No C calls: these are plain table lookups, faster than going through Foundation
/// and, unlike it, strict about alphabet and padding — the JWS rules depend on that.
public enum Base64 {
    /// The two alphabets a JWS uses: the compact segments are base64url without padding (RFC 7515 §2),
    /// the `x5c` certificates are standard base64 with padding (RFC 7515 §4.1.6).
    public enum Alphabet: Sendable {
        case standard
        case url
    }

    private static let standardTable: [UInt8] = table(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    )
    private static let urlTable: [UInt8] = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    /// Four 256-entry tables per alphabet with each sextet already shifted into place, so a quartet decodes with
    /// four loads and three ORs; an invalid character sets bit 31 (checked once per call).
    private static let standardShifted: [UInt32] = shifted(standardTable)
    private static let urlShifted: [UInt32] = shifted(urlTable)

    private static func shifted(_ t: [UInt8]) -> [UInt32] {
        var out = [UInt32](repeating: 0, count: 1024)
        for c in 0..<256 {
            let v = t[c]
            for k in 0..<4 {
                out[k * 256 + c] = v == 0xFF ? 0x8000_0000 : UInt32(v) << UInt32(18 - 6 * k)
            }
        }
        return out
    }
    private static let standardChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func table(_ chars: String) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in chars.utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }

    /// Decodes `input`. `.url` requires no padding; `.standard` requires canonical padding.
    /// Non-zero trailing bits are rejected, so every byte string has exactly one accepted encoding.
    public static func decode<C: Collection>(_ input: C, alphabet: Alphabet) throws(CryptoError) -> [UInt8]
    where C.Element == UInt8 {
        var result: Result<[UInt8], CryptoError>?
        _ = input.withContiguousStorageIfAvailable { buf in
            do throws(CryptoError) {
                result = .success(try decode(UnsafeRawBufferPointer(buf), alphabet: alphabet))
            } catch {
                result = .failure(error)
            }
        }
        if let result { return try result.get() }
        return try decode(Array(input), alphabet: alphabet)
    }

    /// The non-generic core (a JWS segment is thousands of characters: this loop is on the hot path).
    public static func decode(_ input: UnsafeRawBufferPointer, alphabet: Alphabet) throws(CryptoError) -> [UInt8] {
        guard input.count > 0 else { return [] }  // an empty buffer may have no base address
        var count = input.count
        if alphabet == .standard {
            guard count % 4 == 0 else { throw CryptoError(.invalidBase64, "length is not a multiple of 4") }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        }
        guard count % 4 != 1 else { throw CryptoError(.invalidBase64, "impossible length") }
        let table = alphabet == .standard ? standardShifted : urlShifted
        let outCount = count / 4 * 3 + max(0, count % 4 - 1)
        var failed = false
        var trailing: UInt32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: outCount) { dst, initialized in
            table.withUnsafeBufferPointer { t in
                let src = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let d = dst.baseAddress!
                var i = 0
                var o = 0
                var bad: UInt32 = 0
                while i + 4 <= count {
                    let v =
                        t[Int(src[i])] | t[256 + Int(src[i + 1])] | t[512 + Int(src[i + 2])] | t[768 + Int(src[i + 3])]
                    bad |= v
                    d[o] = UInt8(truncatingIfNeeded: v >> 16)
                    d[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    d[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
                let rest = count - i
                if rest >= 2 {
                    var v = t[Int(src[i])] | t[256 + Int(src[i + 1])]
                    if rest == 3 { v |= t[512 + Int(src[i + 2])] }
                    bad |= v
                    d[o] = UInt8(truncatingIfNeeded: v >> 16)
                    o += 1
                    if rest == 3 {
                        d[o] = UInt8(truncatingIfNeeded: v >> 8)
                        o += 1
                        trailing = v & 0xFF
                    } else {
                        trailing = v & 0xFFFF
                    }
                }
                failed = bad & 0x8000_0000 != 0
                initialized = o
            }
        }
        guard !failed else { throw CryptoError(.invalidBase64, "character outside the alphabet") }
        guard trailing == 0 else { throw CryptoError(.invalidBase64, "non-zero trailing bits") }
        return out
    }

    /// Encodes `bytes`; `.standard` pads with `=`, `.url` does not.
    public static func encode<C: Collection>(_ bytes: C, alphabet: Alphabet) -> String where C.Element == UInt8 {
        let chars = alphabet == .standard ? standardChars : urlChars
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let b0 = it.next() {
            let b1 = it.next()
            let b2 = it.next()
            out.append(chars[Int(b0 >> 2)])
            out.append(chars[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 {
                out.append(chars[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
            } else if alphabet == .standard {
                out.append(UInt8(ascii: "="))
            }
            if let b2 {
                out.append(chars[Int(b2 & 0x3F)])
            } else if alphabet == .standard {
                out.append(UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
