import Testing
import WireJSON

/// Numbers as hostile senders write them: the parser keeps their text (or refuses them), and every conversion to a
/// fixed-width integer either fits exactly or says nil — never a trap, never a silently wrapped value.
@Suite struct HostileNumberTests {
    static func number(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test(
        arguments: [
            ("-9223372036854775808", Int64.min), ("9223372036854775807", Int64.max), ("-0", 0), ("0", 0),
            ("1.9", 1), ("-1.9", -1), ("1e3", 1000), ("1E+3", 1000), ("12345678901234.5678", 12_345_678_901_234),
        ] as [(String, Int64)]
    )
    func int64ValueIsExactOrTruncatesFractions(_ text: String, _ value: Int64) throws {
        #expect(try Self.number(text).int64Value == value)
    }

    @Test(arguments: [
        "9223372036854775808", "-9223372036854775809", "1e999", "-1e999", "1e19", "9.3e18", "-9.3e18",
        "99999999999999999999",
        "0.0000000000000000000000001e400",
    ])
    func int64ValueOfNumbersBeyondInt64IsNil(_ text: String) throws {
        #expect(try Self.number(text).int64Value == nil, "\(text)")
    }

    @Test func int64ValueOfTinyMagnitudesIsZero() throws {
        #expect(try Self.number("1e-999").int64Value == 0)
        #expect(try Self.number("-1e-999").int64Value == 0)
    }

    @Test(arguments: [
        String(repeating: "9", count: 10_000), "1" + String(repeating: "0", count: 64),
        "-" + String(repeating: "1", count: 64),
        "0." + String(repeating: "1", count: 70), "1e" + String(repeating: "9", count: 70),
    ])
    func numbersLongerThanAnyRealOneAreRefused(_ text: String) {
        #expect(throws: JSONParseError.self) { try Self.number(text) }
    }

    struct Members: Decodable {
        var i64: Int64?
        var i: Int?
        var i32: Int32?
        var d: Double?
    }

    @Test(arguments: ["9223372036854775808", "-9223372036854775809", "1e999", "1.5", "-0.0", "1e3", "2147483648"])
    func decoderRefusesRatherThanConvertsAnyInexactInteger(_ text: String) throws {
        let decoder = JSONValueDecoder()
        for key in ["i64", "i", "i32"] {
            let bytes = Array("{\"\(key)\":\(text)}".utf8)
            do {
                let m = try decoder.decode(Members.self, from: bytes)
                // Only exact integers in range decode (2147483648 fits Int64 and Int, not Int32).
                #expect(
                    text == "2147483648" && key != "i32" && (m.i64 == 2_147_483_648 || m.i == 2_147_483_648),
                    "\(key): \(text)"
                )
            } catch is DecodingError {
            }
        }
        // A double reads anything numeric (1e999 is +infinity; the type says so).
        let d = try decoder.decode(Members.self, from: Array("{\"d\":\(text)}".utf8)).d
        #expect(d != nil)
    }

    @Test func nestingDeeperThanTheBoundIsRefusedWithoutRecursingFurther() {
        for open in ["[", "{\"a\":"] {
            let deep = String(repeating: open, count: 100_000)
            #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(deep.utf8)) }
        }
        let justDeepEnough =
            String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect((try? JSONParser.parse(Array(justDeepEnough.utf8))) != nil)
    }
}

/// Every integer width and `Float` decode as primitives (fuzz finding: `Fuzz/Regressions/json/decoder-unbox-recursion-
/// uint8.json`): a width the decoder had no case for recursed through `init(from:)` until the stack overflowed.
@Suite struct DecoderWidthTests {
    struct Widths: Decodable, Equatable {
        var a: UInt8, b: Int8, c: Int16, d: UInt16, e: UInt32, f: UInt, g: Float
        var list: [UInt8]
    }

    @Test func everyWidthDecodesAndOutOfRangeIsAMismatch() throws {
        let ok = try JSONParser.parse(
            Array(#"{"a":255,"b":-128,"c":-32768,"d":65535,"e":4294967295,"f":1,"g":1.5,"list":[0,7]}"#.utf8)
        )
        let w = try JSONValueDecoder().decode(Widths.self, from: ok)
        #expect(w == Widths(a: 255, b: -128, c: -32768, d: 65535, e: 4_294_967_295, f: 1, g: 1.5, list: [0, 7]))
        for bad in [
            #"{"a":256,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"list":[]}"#,
            #"{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"list":[300]}"#,
            #"{"a":0,"b":0,"c":0,"d":0,"e":0,"f":-1,"g":0,"list":[]}"#,
            #"{"a":"x","b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"list":[]}"#,
        ] {
            #expect(throws: DecodingError.self) {
                try JSONValueDecoder().decode(Widths.self, from: try JSONParser.parse(Array(bad.utf8)))
            }
        }
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(UInt8.self, from: .string("1")) }
        #expect(try JSONValueDecoder().decode(UInt8.self, from: .number("9")) == 9)
    }
}
