import FuzzSupport
import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// WireJSON's parser: both entry points, and what callers rely on once a document is accepted.
/// - `parse` of a collection and of a raw buffer agree.
/// - The canonical serialization of an accepted document parses back to the same canonical bytes.
/// - `parseObjectWithValueRanges` accepts exactly the objects `parse` accepts, and each recorded range holds the
///   text of that member's value (it parses alone to the same value): V1 redaction replaces the password by range.
@main enum JSONFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let value: JSONValue?
    do { value = try JSONParser.parse(bytes) } catch { value = nil }
    let raw: JSONValue?
    do { raw = try JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size)) } catch { raw = nil }
    guard value == raw else { FuzzSupport.fail("parse([UInt8]) and parse(UnsafeRawBufferPointer) disagree") }

    if let value {
        let canonical = value.canonicalBytes()
        do {
            let again = try JSONParser.parse(canonical)
            guard again.canonicalBytes() == canonical else { FuzzSupport.fail("canonical bytes are not a fixed point") }
        } catch {
            FuzzSupport.fail("canonical bytes of an accepted document do not parse: \(error)")
        }
        walk(value)
    }

    let ranged: (JSONObject, [String: Range<Int>])?
    do { ranged = try JSONParser.parseObjectWithValueRanges(bytes) } catch { ranged = nil }
    switch (value, ranged) {
    case (.object(let o)?, let (object, ranges)?):
        guard o == object else { FuzzSupport.fail("parseObjectWithValueRanges returned a different object") }
        guard Set(ranges.keys) == Set(object.keys) else { FuzzSupport.fail("ranges do not cover every member") }
        for (key, range) in ranges {
            guard range.lowerBound >= 0, range.upperBound <= bytes.count else {
                FuzzSupport.fail("range out of bounds")
            }
            let member: JSONValue
            do { member = try JSONParser.parse(bytes[range]) } catch {
                FuzzSupport.fail("the range of \(key) does not hold a JSON value: \(error)")
            }
            guard member == object[key] else { FuzzSupport.fail("the range of \(key) holds another value") }
        }
    case (.object?, nil): FuzzSupport.fail("parse accepted an object that parseObjectWithValueRanges refused")
    case (_, _?):
        if case .object? = value {} else { FuzzSupport.fail("parseObjectWithValueRanges accepted a non-object") }
    default: break
    }

    // The decoder over parsed values (VerifyReceiptResponse, payloads and the config use it the same way).
    if let value {
        _ = try? JSONValueDecoder().decode(Loose.self, from: value)
        _ = try? JSONValueDecoder().decode([String: Loose].self, from: value)
        _ = try? JSONValueDecoder().decode([Loose].self, from: value)
    }
    return 0
}

/// Reads every accessor on every value (numbers through `int64Value`: Apple's dates and ids).
private func walk(_ v: JSONValue, depth: Int = 0) {
    _ = v.int64Value
    _ = (v.stringValue, v.boolValue, v.isNull)
    if let a = v.arrayValue { for e in a { walk(e, depth: depth + 1) } }
    if let o = v.objectValue {
        _ = o.keys
        for m in o { walk(m.value, depth: depth + 1) }
    }
}

/// Whether `Loose` also asks for the integer widths and `Float` that `JSONValueDecoder.unbox` has no case for.
/// Off in campaigns: asking for them recurses until the stack overflows (finding json/decoder-unbox-recursion; no
/// model decodes them today). `scripts/fuzz --regressions` turns it on so the reproducer keeps being checked.
private let allWidths = getenv("IAPGW_FUZZ_ALL_WIDTHS").map { String(cString: $0) == "1" } ?? false

/// A Decodable that tries the decoder's typed paths (integers of each width, floating point, strings, nesting).
private struct Loose: Decodable {
    var i64: Int64?
    var i32: Int32?
    var u8: UInt8?
    var int: Int?
    var u64: UInt64?
    var double: Double?
    var float: Float?
    var string: String?
    var bool: Bool?
    var nested: [Loose]?
    var map: [String: Loose]?
    var value: JSONValue?

    enum CodingKeys: String, CodingKey {
        case i64, i32, u8, int, u64, double, float, string, bool, nested, map, value
    }

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.container(keyedBy: CodingKeys.self) {
            i64 = try? c.decodeIfPresent(Int64.self, forKey: .i64)
            i32 = try? c.decodeIfPresent(Int32.self, forKey: .i32)
            if allWidths { u8 = try? c.decodeIfPresent(UInt8.self, forKey: .u8) }
            int = try? c.decodeIfPresent(Int.self, forKey: .int)
            u64 = try? c.decodeIfPresent(UInt64.self, forKey: .u64)
            double = try? c.decodeIfPresent(Double.self, forKey: .double)
            if allWidths { float = try? c.decodeIfPresent(Float.self, forKey: .float) }
            string = try? c.decodeIfPresent(String.self, forKey: .string)
            bool = try? c.decodeIfPresent(Bool.self, forKey: .bool)
            nested = try? c.decodeIfPresent([Loose].self, forKey: .nested)
            map = try? c.decodeIfPresent([String: Loose].self, forKey: .map)
            value = try? c.decodeIfPresent(JSONValue.self, forKey: .value)
            return
        }
        if var u = try? decoder.unkeyedContainer() {
            var items: [Loose] = []
            while !u.isAtEnd, items.count < 1000 {
                guard let item = try? u.decode(Loose.self) else { break }
                items.append(item)
            }
            nested = items
            return
        }
        let s = try decoder.singleValueContainer()
        i64 = try? s.decode(Int64.self)
        i32 = try? s.decode(Int32.self)
        if allWidths { u8 = try? s.decode(UInt8.self) }
        u64 = try? s.decode(UInt64.self)
        double = try? s.decode(Double.self)
        if allWidths { float = try? s.decode(Float.self) }
        string = try? s.decode(String.self)
        bool = try? s.decode(Bool.self)
    }
}
