internal import FoundationEssentials

/// The one place the gateway turns values into JSON text: sorted keys and unescaped slashes, so output is stable
/// byte for byte (golden files, signatures over delivered bodies).
public enum JSONOutput {
    public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        // Every value we encode is built from JSON-representable members; failure would be a programming error.
        do { return Array(try encoder.encode(value)) } catch { preconditionFailure("JSON encoding failed: \(error)") }
    }

    public static func string<T: Encodable>(_ value: T, pretty: Bool = false) -> String {
        String(decoding: encode(value, pretty: pretty), as: UTF8.self)
    }
}
