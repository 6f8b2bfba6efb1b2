import Testing
import WireJSON

@Suite struct JSONParserTests {
    static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test func parsesEveryValueKind() throws {
        let v = try Self.parse(
            #" {"s":"x","n":-12.5e3,"i":1759302518835,"t":true,"f":false,"z":null,"a":[1,[2]],"o":{}} "#
        )
        let o = try #require(v.objectValue)
        #expect(o.keys == ["s", "n", "i", "t", "f", "z", "a", "o"])
        #expect(o["s"] == .string("x"))
        #expect(o["n"] == .number("-12.5e3"))
        #expect(o["i"]?.int64Value == 1_759_302_518_835)
        #expect(o["t"] == .bool(true) && o["f"] == .bool(false) && o["z"] == .null)
        #expect(o["a"] == .array([.number("1"), .array([.number("2")])]))
        #expect(o["o"] == .object(JSONObject()))
    }

    @Test func decodesEscapesIncludingSurrogatePairs() throws {
        let v = try Self.parse(#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#)
        #expect(v == .string("a\"b\\c/d\u{8}\u{c}\n\r\té😀"))
    }

    @Test func keepsLargeIntegersExact() throws {
        // A 64-bit id that a Double would round.
        #expect(try Self.parse("9007199254740993").int64Value == 9_007_199_254_740_993)
        // Fractional milliseconds (Xcode tokens) truncate toward zero.
        #expect(try Self.parse("1697679936049.7297").int64Value == 1_697_679_936_049)
        #expect(try Self.parse("\"12\"").int64Value == nil)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "'x'", "01", "1.", ".5", "-", "1e", "+1",
        "tru", "nul", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"tab\tinside\"", "[1] [2]", "{\"a\":1}x", "NaN", "Infinity",
    ])
    func rejectsInvalidDocument(_ text: String) {
        #expect(throws: JSONParseError.self) { try Self.parse(text) }
    }

    @Test func rejectsDuplicateMemberNames() {
        // Two parsers that pick different duplicates would disagree about a signed payload.
        #expect(throws: JSONParseError.self) { try Self.parse(#"{"bundleId":"a","bundleId":"b"}"#) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0x5C, 0x6E, 0xFF, 0x22]) }
    }

    @Test func boundsNestingDepth() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try Self.parse(ok)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try Self.parse(deep) }
    }

    @Test func parsesFromNonContiguousCollections() throws {
        let bytes = Array(#"{"k":[1,2,3]}"#.utf8)
        #expect(try JSONParser.parse(bytes.lazy.map { $0 }) == JSONParser.parse(bytes))
    }
}

@Suite struct JSONValueDecoderTests {
    struct Model: Decodable, Equatable {
        var id: String
        var count: Int
        var big: Int64?
        var flag: Bool?
        var tags: [String]?
        var nested: Inner?
        var raw: JSONValue?
        struct Inner: Decodable, Equatable { var x: Int32 }
    }

    @Test func decodesSynthesizedCodableModels() throws {
        let m = try JSONValueDecoder().decode(
            Model.self,
            from: Array(
                #"{"id":"a","count":3,"big":1759302518835,"flag":null,"tags":["x","y"],"nested":{"x":7},"raw":{"q":[1]},"unknown":1}"#
                    .utf8
            )
        )
        #expect(
            m
                == Model(
                    id: "a",
                    count: 3,
                    big: 1_759_302_518_835,
                    flag: nil,
                    tags: ["x", "y"],
                    nested: .init(x: 7),
                    raw: .object(JSONObject([("q", .array([.number("1")]))]))
                )
        )
    }

    @Test func refusesTypeConfusion() {
        // Strict: a string never decodes as a number, a number never as a string or a bool.
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Model.self, from: Array(#"{"id":"a","count":"3"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Model.self, from: Array(#"{"id":1,"count":3}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Model.self, from: Array(#"{"id":"a","count":3,"flag":1}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Model.self, from: Array(#"{"id":"a","count":3.5}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Model.self, from: Array(#"{"count":3}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(
                Model.self,
                from: Array(#"{"id":"a","count":3,"nested":{"x":4294967296}}"#.utf8)
            )
        }
    }
}
