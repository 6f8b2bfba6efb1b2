#if canImport(Glibc)
import Glibc
#endif

/// A strict RFC 8259 parser over bytes: UTF-8 validated, duplicate keys rejected, nesting bounded, no trailing
/// garbage. Written for the hot path (a V2 notification is ~20 KB, mostly three long strings), so string bodies
/// without escapes are validated and copied in one step.
public struct JSONParser {
    /// Maximum nesting depth; deeper documents are rejected rather than risking the stack.
    public static let maxDepth = 64

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        var result: Result<JSONValue, JSONParseError>?
        _ = bytes.withContiguousStorageIfAvailable { buf in
            do throws(JSONParseError) {
                result = .success(try parse(UnsafeRawBufferPointer(buf)))
            } catch {
                result = .failure(error)
            }
        }
        if let result { return try result.get() }
        Array(bytes).withUnsafeBytes { buf in
            do throws(JSONParseError) {
                result = .success(try parse(buf))
            } catch {
                result = .failure(error)
            }
        }
        return try result!.get()
    }

    public static func parse(_ buffer: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        var p = Cursor(buffer: buffer)
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.index == buffer.count else { throw p.error("trailing characters after the document") }
        return v
    }

    /// Parses a document that must be an object and also returns the byte range of each top-level member's value
    /// in `bytes` — so a caller can replace one value (a V1 `password`) and keep every other byte as it came.
    public static func parseObjectWithValueRanges(
        _ bytes: [UInt8]
    ) throws(JSONParseError) -> (JSONObject, [String: Range<Int>]) {
        var result: Result<(JSONObject, [String: Range<Int>]), JSONParseError>?
        bytes.withUnsafeBytes { buffer in
            do throws(JSONParseError) {
                var p = Cursor(buffer: buffer)
                p.recordTopLevelRanges = true
                p.skipWhitespace()
                guard !p.atEnd, p.peek == UInt8(ascii: "{") else { throw p.error("expected an object") }
                let v = try p.value(depth: 0)
                p.skipWhitespace()
                guard p.index == buffer.count else { throw p.error("trailing characters after the document") }
                guard case .object(let o) = v else { throw p.error("expected an object") }
                result = .success((o, p.topLevelRanges))
            } catch {
                result = .failure(error)
            }
        }
        return try result!.get()
    }

    private struct Cursor {
        let buffer: UnsafeRawBufferPointer
        var index = 0
        var recordTopLevelRanges = false
        var topLevelRanges: [String: Range<Int>] = [:]

        init(buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

        func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: index) }

        @inline(__always) var atEnd: Bool { index >= buffer.count }
        @inline(__always) var peek: UInt8 { buffer[index] }

        mutating func skipWhitespace() {
            while index < buffer.count {
                switch buffer[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
            guard !atEnd else { throw error("unexpected end of input") }
            switch peek {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let n = word.utf8CodeUnitCount
            guard buffer.count - index >= n else { throw error("truncated literal") }
            let w = word.utf8Start
            for i in 0..<n where buffer[index + i] != w[i] { throw error("invalid literal") }
            index += n
        }

        mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw error("nesting too deep") }
            index += 1  // {
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if !atEnd, peek == UInt8(ascii: "}") {
                index += 1
                return .object(JSONObject(members))
            }
            while true {
                skipWhitespace()
                guard !atEnd, peek == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let keyStart = index
                let key = try string()
                for m in members where m.key == key {
                    index = keyStart
                    throw error("duplicate member name")
                }
                skipWhitespace()
                guard !atEnd, peek == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                let valueStart = index
                let v = try value(depth: depth)
                if recordTopLevelRanges, depth == 1 { topLevelRanges[key] = valueStart..<index }
                members.append((key, v))
                skipWhitespace()
                guard !atEnd else { throw error("unterminated object") }
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if peek == UInt8(ascii: "}") {
                    index += 1
                    return .object(JSONObject(members))
                }
                throw error("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw error("nesting too deep") }
            index += 1  // [
            var items: [JSONValue] = []
            skipWhitespace()
            if !atEnd, peek == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth))
                skipWhitespace()
                guard !atEnd else { throw error("unterminated array") }
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if peek == UInt8(ascii: "]") {
                    index += 1
                    return .array(items)
                }
                throw error("expected ',' or ']'")
            }
        }

        mutating func number() throws(JSONParseError) -> String {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            guard !atEnd else { throw error("truncated number") }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(peek) {
                while !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(peek) { index += 1 }
            } else {
                throw error("invalid number")
            }
            if !atEnd, peek == UInt8(ascii: ".") {
                index += 1
                let digits = index
                while !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(peek) { index += 1 }
                guard index > digits else { throw error("invalid fraction") }
            }
            if !atEnd, peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if !atEnd, peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                let digits = index
                while !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(peek) { index += 1 }
                guard index > digits else { throw error("invalid exponent") }
            }
            guard index - start <= 64 else { throw error("number too long") }
            return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
        }

        mutating func string() throws(JSONParseError) -> String {
            index += 1  // opening quote
            let start = index
            // Fast path: find the closing quote with memchr (vectorized in libc), then check the span for
            // escapes and control characters in one branch-free (vectorizable) pass; either sends us to the slow
            // path. A byte-at-a-time loop with early exits costs 8× more on the ~6 KB strings of a notification.
            let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if let q = memchr(base + index, 0x22, buffer.count - index) {
                let quote = UnsafeRawPointer(q) - UnsafeRawPointer(base)
                var special: UInt8 = 0
                for i in index..<quote {
                    let c = base[i]
                    special |= (c == 0x5C ? 1 : 0) | (c < 0x20 ? 1 : 0)
                }
                if special == 0 {
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<quote])
                    guard let s = String(validating: slice, as: UTF8.self) else {
                        throw error("invalid UTF-8 in string")
                    }
                    index = quote + 1
                    return s
                }
            }
            while index < buffer.count, buffer[index] != 0x5C, buffer[index] >= 0x20, buffer[index] != 0x22 {
                index += 1
            }
            guard index < buffer.count else { throw error("unterminated string") }
            var out = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[start..<index]))
            while true {
                guard index < buffer.count else { throw error("unterminated string") }
                let c = buffer[index]
                if c == UInt8(ascii: "\"") {
                    index += 1
                    guard let s = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8 in string") }
                    return s
                }
                guard c >= 0x20 else { throw error("control character in string") }
                if c != UInt8(ascii: "\\") {
                    out.append(c)
                    index += 1
                    continue
                }
                index += 1
                guard index < buffer.count else { throw error("unterminated escape") }
                let e = buffer[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard buffer.count - index >= 6, buffer[index] == UInt8(ascii: "\\"),
                            buffer[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                    out.append(contentsOf: UTF8.encode(u)!)
                default:
                    throw error("invalid escape")
                }
            }
        }

        mutating func hex4() throws(JSONParseError) -> UInt32 {
            guard buffer.count - index >= 4 else { throw error("truncated \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = buffer[index]
                let d: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw error("invalid \\u escape")
                }
                v = v << 4 | d
                index += 1
            }
            return v
        }
    }
}
