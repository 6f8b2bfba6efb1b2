import Testing
import WireJSON

/// The one wording of a body that did not decode: the adapters' (`path: words`, `invalid` for anything else) and the
/// App Store Connect client's (`not JSON: …`, no `: ` without a path, words clipped to printable ASCII).
@Suite struct DecodingFailureTests {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    struct Inner: Decodable { var n: Int }
    struct Outer: Decodable { var inner: Inner }

    static func failure(_ json: String) -> any Error {
        do {
            _ = try JSONValueDecoder().decode(Outer.self, from: Array(json.utf8))
            return CancellationError()
        } catch {
            return error
        }
    }

    static let path = [Key("data"), Key("signedTransactionInfo")]

    @Test(arguments: [
        (#"{"inner":{"n":"7"}}"#, "inner.n: expected Int, found a string"),
        (#"{"inner":{}}"#, "inner: missing member"),
        (#"{"inner":[]}"#, "inner: expected Dictionary<String, String>, found an array"),
        ("[1]", ": expected Dictionary<String, String>, found an array"),
        ("{", "invalid"),
    ])
    func theAdaptersSayThePathAndTheMismatch(json: String, expected: String) {
        #expect(DecodingFailure.describe(Self.failure(json)) == expected)
    }

    @Test(arguments: [
        (#"{"inner":{"n":"7"}}"#, "inner.n: expected Int, found a string"),
        (#"{"inner":{}}"#, "inner: missing member"),
        ("[1]", "expected Dictionary<String, String>, found an array"),
    ])
    func appStoreConnectLeavesOutAnEmptyPath(json: String, expected: String) {
        #expect(DecodingFailure.describe(Self.failure(json), clippedTo: 120) == expected)
    }

    @Test func eachKindOfDecodingErrorGivesItsPathAndWords() {
        let c = DecodingError.Context(codingPath: Self.path, debugDescription: "words")
        let errors: [DecodingError] = [
            .typeMismatch(Int.self, c), .valueNotFound(String.self, c), .keyNotFound(Key("k"), c), .dataCorrupted(c),
        ]
        for error in errors {
            #expect(DecodingFailure.describe(error) == "data.signedTransactionInfo: words")
            #expect(DecodingFailure.describe(error, clippedTo: 120) == "data.signedTransactionInfo: words")
        }
    }

    @Test func anErrorThatIsNoDecodingErrorIsInvalidUnlessAppStoreConnectNamesTheParseError() throws {
        #expect(DecodingFailure.describe(CancellationError()) == "invalid")
        #expect(DecodingFailure.describe(CancellationError(), clippedTo: 120) == "invalid")
        let parse = try #require(Self.failure("{") as? JSONParseError)
        #expect(DecodingFailure.describe(parse) == "invalid")
        #expect(DecodingFailure.describe(parse, clippedTo: 120) == "not JSON: \(parse.message)")
        #expect(!parse.message.isEmpty)
    }

    @Test func appStoreConnectKeepsTheWordsShortAndPrintable() {
        let long = String(repeating: "x", count: 130)
        let error = DecodingError.dataCorrupted(.init(codingPath: [Key("a")], debugDescription: long))
        #expect(DecodingFailure.describe(error, clippedTo: 120) == "a: " + String(repeating: "x", count: 117) + "...")
        #expect(DecodingFailure.describe(error) == "a: " + long, "the adapters' words are not clipped")
        let control = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad\u{7}\u{e9}"))
        #expect(DecodingFailure.describe(control, clippedTo: 120) == "bad???")
        #expect(DecodingFailure.describe(control) == ": bad\u{7}\u{e9}")
    }

    @Test func clipKeepsPrintableASCIIAndMarksACut() {
        #expect(Clip.printable("abc", 3) == "abc")
        #expect(Clip.printable("abcd", 3) == "...")
        #expect(Clip.printable("abcdef", 5) == "ab...")
        #expect(Clip.printable("a\nb", 10) == "a?b")
        #expect(Clip.printable("", 0) == "")
    }
}
