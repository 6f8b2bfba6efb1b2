import Testing
import WireJSON

/// `JSONObjectWriter`: members come out sorted by the UTF-8 bytes of their names whatever order they were added in,
/// with the canonical escapes, and the same bytes as the canonical serialization of the same object.
@Suite struct JSONObjectWriterTests {
    /// One member of each kind, in the order given.
    static func written(_ order: [Int]) -> [UInt8] {
        var w = JSONObjectWriter()
        for i in order {
            switch i {
            case 0: w.string("b", "x\"y\\z\n\u{1}é")
            case 1: w.int("a", Int64(-9_223_372_036_854_775_808))
            case 2: w.bool("ab", true)
            case 3: w.bool("a_", false)
            case 4: w.raw("B", Array(#"{"k":[1,2]}"#.utf8))
            case 5: w.string("é", nil)
            case 6: w.int("aa", Int?(0))
            default: w.raw("z", nil)
            }
        }
        return w.finish()
    }

    static let expected =
        #"{"B":{"k":[1,2]},"a":-9223372036854775808,"a_":false,"aa":0,"ab":true,"b":"x\"y\\z\n\u0001é","z":null,"é":null}"#

    @Test func membersComeOutSortedByTheirNamesBytesInAnyOrder() throws {
        let inOrder = Self.written([4, 1, 3, 6, 2, 0, 7, 5])
        #expect(String(decoding: inOrder, as: UTF8.self) == Self.expected)
        for order in [
            [0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0], [4, 1, 3, 6, 2, 0, 5, 7], [5, 4, 1, 3, 6, 2, 0, 7],
        ] {
            #expect(Self.written(order) == inOrder, "\(order)")
        }
        #expect(try JSONParser.parse(inOrder).canonicalBytes() == inOrder)
    }

    @Test func emptyAndSingleObjects() {
        #expect(JSONObjectWriter().finish() == Array("{}".utf8))
        #expect(Self.written([7]) == Array(#"{"z":null}"#.utf8))
        #expect(Self.written([1]) == Array(#"{"a":-9223372036854775808}"#.utf8))
    }
}
