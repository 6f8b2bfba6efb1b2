import HTTPClient
import Testing

/// The one percent-encoding of the Apple clients' URLs: RFC 3986's unreserved characters kept in query members, `.`
/// encoded in path segments, and — checked against the two encodings it replaced — the same URL from every caller
/// for the values their tests use.
@Suite struct URLEncodingTests {
    @Test(arguments: [
        ("AZaz09-._~", "AZaz09-._~"), (" ", "%20"), ("/", "%2F"), ("?", "%3F"), ("#", "%23"), ("&", "%26"),
        ("=", "%3D"), ("+", "%2B"), ("%", "%25"), (",", "%2C"), ("[", "%5B"), ("]", "%5D"), (":", "%3A"),
        ("\u{0}", "%00"), ("\u{7F}", "%7F"), ("é", "%C3%A9"), ("😀", "%F0%9F%98%80"), ("", ""),
        ("com.example.sim", "com.example.sim"), ("filter[bundleId]", "filter%5BbundleId%5D"),
    ])
    func queryMembersKeepOnlyTheUnreservedCharacters(value: String, expected: String) {
        #expect(URLEncoding.percentEncoded(value) == expected)
    }

    @Test func aCallerKeepsWhatItNamesAndNothingElse() {
        #expect(URLEncoding.percentEncoded("bundleId,name", keeping: [UInt8(ascii: ",")]) == "bundleId,name")
        #expect(URLEncoding.percentEncoded("a,b[c]", keeping: [UInt8(ascii: ",")]) == "a,b%5Bc%5D")
        #expect(URLEncoding.percentEncoded("a b", keeping: [UInt8(ascii: ",")]) == "a%20b")
    }

    @Test(arguments: [
        ("1000000123456789", "1000000123456789"), (".", "%2E"), ("..", "%2E%2E"),
        ("../a/b?c=d", "%2E%2E%2Fa%2Fb%3Fc%3Dd"), ("a.b", "a%2Eb"), ("x y/z", "x%20y%2Fz"), ("-_~", "-_~"),
    ])
    func aPathSegmentCanNeverBeADotSegment(value: String, expected: String) {
        #expect(URLEncoding.pathSegment(value) == expected)
    }

    // MARK: The two encodings this one replaced

    /// The App Store Server API client's encoding before (`.` encoded everywhere, nothing kept).
    static func formerServerAPI(_ value: String) -> String {
        former(value) { b in
            isLetterOrDigit(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
        }
    }

    /// The App Store Connect client's encoding before (`.` kept everywhere, plus `keeping`).
    static func formerConnect(_ value: String, keeping: Set<UInt8> = []) -> String {
        former(value) { b in
            isLetterOrDigit(b)
                || [UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~")].contains(b)
                || keeping.contains(b)
        }
    }

    static func isLetterOrDigit(_ b: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
    }

    static func former(_ value: String, keeps: (UInt8) -> Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in value.utf8 {
            if keeps(b) { out.append(b) } else { out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0x0F)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Every value a test sends through either client, by where it goes in the URL.
    static let serverAPISegments = [
        "1", "2000000000000001", "1000000000000001", "tok-1", "../a/b?c=d", "11111111-2222-3333-4444-555555555555",
    ]
    static let serverAPIQueryValues = ["r2", "p1", "20", "40", "0"]
    static let connectSegments = ["1", "1234567890", "6446251101"]
    static let connectQuery = [
        ("filter[bundleId]", "com.example.sim"), ("filter[bundleId]", "com.example.other"),
        (
            "fields[apps]",
            "bundleId,subscriptionStatusUrl,subscriptionStatusUrlVersion,subscriptionStatusUrlForSandbox,subscriptionStatusUrlVersionForSandbox"
        ),
    ]

    @Test func everyCallerBuildsTheURLItBuiltBeforeForTheValuesItsTestsUse() {
        for value in Self.serverAPISegments {
            #expect(URLEncoding.pathSegment(value) == Self.formerServerAPI(value), "\(value)")
        }
        for value in Self.serverAPIQueryValues {
            #expect(URLEncoding.percentEncoded(value) == Self.formerServerAPI(value), "\(value)")
        }
        for value in Self.connectSegments {
            #expect(URLEncoding.pathSegment(value) == Self.formerConnect(value), "\(value)")
        }
        for (name, value) in Self.connectQuery {
            #expect(URLEncoding.percentEncoded(name) == Self.formerConnect(name))
            #expect(
                URLEncoding.percentEncoded(value, keeping: [UInt8(ascii: ",")])
                    == Self.formerConnect(value, keeping: [UInt8(ascii: ",")])
            )
        }
    }

    /// Where the two disagreed — `.` — query members now keep it (RFC 3986 §2.3: unreserved characters are not
    /// encoded; the App Store Server API client encoded it) and path segments encode it (no id may become a dot
    /// segment; the App Store Connect client kept it). Every other byte is encoded exactly as both did.
    @Test func theyDifferFromTheFormerEncodingsOnlyInTheDot() {
        var values = (0...0x7F).map { String(UnicodeScalar(UInt8($0))) }
        values += ["é", "😀", "a.b", "..", "com.example.sim"]
        for value in values {
            let hasDot = value.utf8.contains(UInt8(ascii: "."))
            #expect((URLEncoding.percentEncoded(value) == Self.formerConnect(value)), "\(value)")
            #expect((URLEncoding.percentEncoded(value) == Self.formerServerAPI(value)) == !hasDot, "\(value)")
            #expect((URLEncoding.pathSegment(value) == Self.formerServerAPI(value)), "\(value)")
            #expect((URLEncoding.pathSegment(value) == Self.formerConnect(value)) == !hasDot, "\(value)")
        }
    }
}
