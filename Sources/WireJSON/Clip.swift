/// Text from elsewhere made fit for a log line: bytes outside printable ASCII become `?`, at most `limit` bytes
/// (`...` marks a cut).
public enum Clip {
    public static func printable(_ text: String, _ limit: Int) -> String {
        let bytes = text.utf8.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }
        guard bytes.count > limit else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.prefix(max(0, limit - 3)), as: UTF8.self) + "..."
    }
}
