import Canonical
import TestSupport
import Testing
import WireJSON

/// Apple's V1 date renderings (``AppleDateText``, ``PacificTime``: `Canonical`) against the dates of Apple's own
/// bodies in `Fixtures/v1`.
@Suite struct AppleDateFixtureTests {
    /// Every date Apple wrote in the real bodies and verifyReceipt answers of `Fixtures/v1` in all three renderings
    /// (`x`, `x_ms`, `x_pst`) comes out the same from its milliseconds.
    @Test func rendersEveryDateOfApplesOwnBodiesAsApple() throws {
        var checked = 0
        func visit(_ value: JSONValue, _ file: String) {
            switch value {
            case .object(let o):
                for (key, member) in o where key.hasSuffix("_ms") {
                    let base = String(key.dropLast(3))
                    guard case .string(let ms) = member, let millis = Int64(ms),
                        case .string(let gmt)? = o[base], gmt.hasSuffix(" Etc/GMT"),
                        case .string(let pst)? = o[base + "_pst"]
                    else { continue }
                    #expect(AppleDateText.gmt(millis) == gmt, "\(file): \(base)")
                    #expect(AppleDateText.pst(millis) == pst, "\(file): \(base)")
                    checked += 1
                }
                for (_, member) in o { visit(member, file) }
            case .array(let items):
                for item in items { visit(item, file) }
            default:
                break
            }
        }
        for name in Fixtures.names(in: "v1") {
            visit(try JSONParser.parse(try Fixtures.bytes("v1/\(name)")), name)
        }
        #expect(checked > 300, "the fixtures hold hundreds of dated members (\(checked))")
    }
}
