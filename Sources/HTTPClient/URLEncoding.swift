/// Percent-encoding for the URLs the gateway's Apple clients build (RFC 3986 §2): the one place a path segment or a
/// query member is encoded.
public enum URLEncoding {
    /// `value`'s UTF-8 with every byte but RFC 3986's unreserved characters (`ALPHA`, `DIGIT`, `-`, `.`, `_`, `~`)
    /// and those in `keeping` written as `%XX` (upper-case hex): for query names and values. A caller keeps more only
    /// where the API reads the character itself (App Store Connect's `fields[apps]=a,b` lists), never `&`, `=` or `#`.
    public static func percentEncoded(_ value: String, keeping: Set<UInt8> = []) -> String {
        encoded(value) { b in isUnreserved(b) || keeping.contains(b) }
    }

    /// One path segment: as ``percentEncoded(_:keeping:)``, and `.` as `%2E` too, so that no value — an id Apple
    /// answered, a token a caller passed — can become a `.` or `..` segment, which curl and any proxy on the way
    /// resolve away (RFC 3986 §5.2.4) and which would then change the path the request goes to.
    public static func pathSegment(_ value: String) -> String {
        encoded(value) { b in b != UInt8(ascii: ".") && isUnreserved(b) }
    }

    /// RFC 3986 §2.3: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func encoded(_ value: String, keeps: (UInt8) -> Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for b in value.utf8 {
            if keeps(b) {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
