import Testing
import WireJSON

/// ``SecretRedactor``: secrets found as bytes or through JSON escapes, wherever they stand, in bytes that need not be
/// JSON; `password` values dropped from bodies that do not parse.
@Suite struct SecretRedactorTests {
    static let secret = "0123456789abcdef0123456789abcdef"
    static let redactor = SecretRedactor([
        SecretRedactor.Secret(name: "APP_SECRET", value: Array(secret.utf8)),
        SecretRedactor.Secret(name: "HOOK", value: Array("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=".utf8)),
        SecretRedactor.Secret(name: "SHORT", value: Array("tiny".utf8)),
    ])

    static func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    @Test(arguments: [
        (#"{"password":"0123456789abcdef0123456789abcdef"}"#, #"{"password":"iapgw-secret:APP_SECRET"}"#),
        (#"{"a":"x0123456789abcdef0123456789abcdefy"}"#, #"{"a":"xiapgw-secret:APP_SECRETy"}"#),
        // Outside any string, in bytes that are not JSON at all.
        ("garbage 0123456789abcdef0123456789abcdef garbage", "garbage iapgw-secret:APP_SECRET garbage"),
        // Spelled with escapes: the whole spelling goes.
        (#"{"p":"\u0030123456789abcdef0123456789abcde\u0066"}"#, #"{"p":"iapgw-secret:APP_SECRET"}"#),
        (#"{"p":"0123456789abcdef\/0123"}"#, #"{"p":"0123456789abcdef\/0123"}"#),
        (#"{"h":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="}"#, #"{"h":"iapgw-secret:HOOK"}"#),
        (#"{"h":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ\u003d"}"#, #"{"h":"iapgw-secret:HOOK"}"#),
        // Twice, back to back.
        (secret + secret, "iapgw-secret:APP_SECRETiapgw-secret:APP_SECRET"),
        // Its bytes after an escape that swallows its first characters (`\u0001`, then `23…`): the whole escape goes
        // with them, and the string stays a string.
        (#"{"p":"\u00\#(secret)"}"#, #"{"p":"iapgw-secret:APP_SECRET"}"#),
        (#"{"p":"\u0\#(secret)x"}"#, #"{"p":"iapgw-secret:APP_SECRETx"}"#),
    ])
    func replacesEverySpelling(_ input: String, _ expected: String) {
        #expect(Self.text(Self.redactor.redact(Array(input.utf8))) == expected)
    }

    @Test func leavesBytesWithoutASecretAloneAndSaysSo() {
        for input in [
            "", "{}", #"{"password":"nope"}"#, "tiny tiny", "0123456789abcdef0123456789abcde", #"\u00"#, "\\",
            #"\ud800"#,
        ] {
            #expect(Self.redactor.redacted(Array(input.utf8)) == nil, "\(input)")
            #expect(!Self.redactor.occurs(in: Array(input.utf8)))
        }
        #expect(SecretRedactor([]).isEmpty && SecretRedactor([.init(name: "S", value: Array("short".utf8))]).isEmpty)
    }

    @Test func findsASecretAcrossInvalidUTF8AndSurrogatePairs() {
        let invalid: [UInt8] = [0xFF, 0xFE] + Array(Self.secret.utf8) + [0xC3]
        #expect(Self.redactor.redact(invalid) == [0xFF, 0xFE] + Array("iapgw-secret:APP_SECRET".utf8) + [0xC3])
        let emoji = SecretRedactor([.init(name: "E", value: Array("secret-with-😀-inside".utf8))])
        #expect(Self.text(emoji.redact(Array(#""secret-with-\ud83d\ude00-inside""#.utf8))) == #""iapgw-secret:E""#)
        #expect(emoji.redact("x secret-with-😀-inside y") == "x iapgw-secret:E y")
    }

    @Test func aSecretThatIsPartOfAnotherGoesWithTheLongerOne() {
        let r = SecretRedactor([
            .init(name: "A", value: Array("abcdefghijklmnop".utf8)),
            .init(name: "B", value: Array("abcdefghijklmnopqrstuvwxyz".utf8)),
        ])
        #expect(r.redact("<abcdefghijklmnopqrstuvwxyz>") == "<iapgw-secret:B>")
        #expect(r.redact("<abcdefghijklmnopq>") == "<iapgw-secret:Aq>")
    }

    @Test(arguments: [
        (#"{"password":"fedcba"}"#, #"{"password":"iapgw-redacted"}"#),
        (
            #"{"a":1, "password" : "fed\"cba" ,"b":2}trailing"#,
            #"{"a":1, "password" : "iapgw-redacted" ,"b":2}trailing"#
        ),
        // Cut off in the middle of the value.
        (#"{"password":"fedcb"#, #"{"password":"iapgw-redacted"#),
        (
            #"{"x":{"password":"a"},"password":"b"}"#,
            #"{"x":{"password":"iapgw-redacted"},"password":"iapgw-redacted"}"#
        ),
        // A marker names the configured secret that stood there: kept.
        (#"{"password":"iapgw-secret:APP_SECRET"}"#, #"{"password":"iapgw-secret:APP_SECRET"}"#),
        // Not a string value, or no value at all: nothing to drop.
        (#"{"password":12}"#, #"{"password":12}"#), (#"{"password""#, #"{"password""#),
        (#""password":"#, #""password":"#),
    ])
    func dropsEveryPasswordValueLeniently(_ input: String, _ expected: String) {
        #expect(Self.text(SecretRedactor.redactingPasswordValues(Array(input.utf8))) == expected)
    }

    /// The scan looks at eight bytes at a time: a secret is found at every offset from the start to the very end of
    /// a body, whether or not a backslash stands somewhere (which switches the scan to the decoded bytes), and a
    /// body of lone candidates (bytes that start a secret) is left alone.
    @Test func findsASecretAtEveryOffsetOfABody() {
        let filler = Array(String(repeating: "Zy-_", count: 12).utf8)
        for escape in [nil, 0, 7, 8, 47] as [Int?] {
            for offset in 0...filler.count {
                var body = filler
                body.insert(contentsOf: Self.secret.utf8, at: offset)
                var expected = filler
                expected.insert(contentsOf: "iapgw-secret:APP_SECRET".utf8, at: offset)
                if let escape {
                    // A `\/` in the filler, before or after the secret.
                    let at = escape < offset ? escape : escape + Self.secret.utf8.count
                    body.insert(contentsOf: #"\/"#.utf8, at: at)
                    expected.insert(contentsOf: #"\/"#.utf8, at: escape < offset ? escape : escape + 23)
                }
                #expect(
                    Self.text(Self.redactor.redact(body)) == Self.text(expected),
                    "offset \(offset), \(escape ?? -1)"
                )
            }
        }
        let candidates = Array(String(repeating: "0w", count: 40).utf8)
        #expect(Self.redactor.redacted(candidates) == nil)
        #expect(Self.redactor.redacted(Array(candidates.prefix(79)) + Array(Self.secret.utf8.prefix(31))) == nil)
    }

    // MARK: A head of outside bytes

    /// A secret the cut at `maxLength` would halve is replaced whole, wherever the cut falls and however the secret
    /// is spelled; the result is never longer than `maxLength`.
    @Test func aHeadCutInTheMiddleOfASecretKeepsNoneOfIt() {
        let escaped = #"\u0030123456789abcdef0123456789abcde\u0066"#
        for spelling in [Self.secret, escaped] {
            for start in 0..<40 {
                let body = Array(String(repeating: "x", count: start).utf8) + Array(spelling.utf8) + Array("tail".utf8)
                let head = Self.redactor.redactedPrefix(body, maxLength: 32)
                #expect(head.count <= 32)
                let text = String(decoding: head, as: UTF8.self)
                // Not one byte of the secret stands after the filler: only the marker, or part of it.
                let after = text.dropFirst(min(start, 32))
                #expect(
                    "iapgw-secret:APP_SECRET".hasPrefix(after) || after.hasPrefix("iapgw-secret:APP_SECRET"),
                    "\(start)"
                )
            }
        }
        #expect(Self.redactor.redactedPrefix(Array("short".utf8), maxLength: 1_024) == Array("short".utf8))
        #expect(SecretRedactor([]).redactedPrefix(Array(Self.secret.utf8), maxLength: 8) == Array("01234567".utf8))
        // Whole bytes as `redact` makes them, when the cut falls after them.
        let body = Array("a \(Self.secret) b \(Self.secret)".utf8)
        #expect(Self.redactor.redactedPrefix(body, maxLength: 1_024) == Self.redactor.redact(body))
    }

    @Test func aValueOfTheMomentIsAdded() {
        let signature = "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
        let r = Self.redactor.adding([.init(name: SecretRedactor.webhookSignatureName, value: Array(signature.utf8))])
        #expect(
            r.redact("sig v1,\(signature) \(Self.secret)")
                == "sig v1,iapgw-secret:webhook-signature iapgw-secret:APP_SECRET"
        )
        // Escaped as JSON writes a slash.
        let escaped = signature.split(separator: "/", omittingEmptySubsequences: false).joined(separator: #"\/"#)
        #expect(r.redact(#"{"s":"v1,\#(escaped)"}"#) == #"{"s":"v1,iapgw-secret:webhook-signature"}"#)
        #expect(Self.redactor.adding([]).redact(signature) == signature)
    }

    @Test(arguments: [
        // A signature of another request, found by its shape.
        ("a v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= b", "a v1,iapgw-secret:webhook-signature b"),
        (
            "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,Bq1E0Cd4cPL5JQ2lZ0wJcrJ1dE1h0c4wU4H3mVdJ2vw=",
            "v1,iapgw-secret:webhook-signature v1,iapgw-secret:webhook-signature"
        ),
        (#""v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN\/H\/pI4=""#, #""v1,iapgw-secret:webhook-signature""#),
        // Cut by the end of the head.
        ("webhook-signature: v1,K5oZfz", "webhook-signature: v1,iapgw-secret:webhook-signature"),
        // Left alone: too short to be one, a marker already, no `v1,`.
        ("v1,abc def", "v1,abc def"),
        ("v1,iapgw-secret:webhook-signature", "v1,iapgw-secret:webhook-signature"),
        ("K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="),
        ("v1,", "v1,"),
        ("", ""),
    ])
    func aWebhookSignatureIsFoundByItsShape(_ input: String, _ expected: String) {
        #expect(Self.text(SecretRedactor.redactingWebhookSignatures(Array(input.utf8))) == expected)
    }

    /// The head's invariants over many bodies made of the pieces that matter (secrets as bytes and escaped, signatures,
    /// escapes cut short, filler), cut at every length around them: never longer than asked, the start of the whole
    /// body's redaction, no secret left, signatures found once for all. A fixed seed: the same bodies on every run.
    @Test func everyHeadIsTheStartOfTheRedactedBodyAndHoldsNoSecret() {
        let pieces = [
            Self.secret, #"\u0030123456789abcdef0123456789abcde\u0066"#, "0123456789abcdef",
            "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
            "v1,", "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", #"\/"#, #"\u00"#, "\\", "x", "yy ", "\"", "😀",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for _ in 0..<3_000 {
            let body = Array((0..<next(12)).map { _ in pieces[next(pieces.count)] }.joined().utf8)
            let whole = Self.redactor.redact(body)
            for limit in [0, 1, 15, 31, 32, 33, 47, 64, next(200)] {
                let head = Self.redactor.redactedPrefix(body, maxLength: limit)
                #expect(head.count <= limit)
                #expect(whole.starts(with: head), "\(Self.text(body) ?? "") at \(limit)")
                let kept = SecretRedactor.redactingWebhookSignatures(head)
                #expect(!Self.text(kept)!.contains(Self.secret))
                #expect(SecretRedactor.redactingWebhookSignatures(kept) == kept)
            }
        }
    }
}
