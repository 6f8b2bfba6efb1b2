internal import CPostgres

/// PostgreSQL's text output format, decoded by the column's type OID.
enum TextFormat {
    static func decode(_ bytes: UnsafeRawBufferPointer, type: Oid) -> PostgresValue {
        switch type {
        case EncodedParameters.boolOID:
            return .bool(bytes.first == UInt8(ascii: "t"))
        case EncodedParameters.int8OID, EncodedParameters.int2OID, EncodedParameters.int4OID, EncodedParameters.oidOID:
            if let v = Int64(String(decoding: bytes, as: UTF8.self)) { return .int64(v) }
        case EncodedParameters.float4OID, EncodedParameters.float8OID:
            if let v = double(String(decoding: bytes, as: UTF8.self)) { return .double(v) }
        case EncodedParameters.byteaOID:
            if let v = bytea(bytes) { return .bytea(v) }
        default:
            break
        }
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    static func double(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(text)
        }
    }

    /// `bytea_output = hex` (`\x` and two hex digits per byte, the default) or `escape` (printable bytes as they
    /// are, `\\` for a backslash, `\ooo` octal for the rest).
    static func bytea(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        let backslash = UInt8(ascii: "\\")
        if text.count >= 2, text[0] == backslash, text[1] == UInt8(ascii: "x") {
            guard text.count % 2 == 0 else { return nil }
            var out = [UInt8]()
            out.reserveCapacity((text.count - 2) / 2)
            var i = 2
            while i < text.count {
                guard let high = hexDigit(text[i]), let low = hexDigit(text[i + 1]) else { return nil }
                out.append(high << 4 | low)
                i += 2
            }
            return out
        }
        var out = [UInt8]()
        out.reserveCapacity(text.count)
        var i = 0
        while i < text.count {
            let b = text[i]
            guard b == backslash else {
                out.append(b)
                i += 1
                continue
            }
            if i + 1 < text.count, text[i + 1] == backslash {
                out.append(backslash)
                i += 2
                continue
            }
            guard i + 3 < text.count, let o1 = octal(text[i + 1]), let o2 = octal(text[i + 2]),
                let o3 = octal(text[i + 3]), o1 <= 3
            else { return nil }
            out.append(o1 << 6 | o2 << 3 | o3)
            i += 4
        }
        return out
    }

    private static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func octal(_ b: UInt8) -> UInt8? {
        b >= UInt8(ascii: "0") && b <= UInt8(ascii: "7") ? b - UInt8(ascii: "0") : nil
    }
}
