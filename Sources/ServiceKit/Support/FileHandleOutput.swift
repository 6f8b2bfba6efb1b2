#if canImport(Glibc)
import Glibc
#endif

/// Writes to standard error without touching C globals (`stderr` is not concurrency-safe in Swift 6).
public enum FileHandleOutput {
    public static func stderr(_ text: String) { write(text, to: 2) }

    /// Writes to standard output at once, unbuffered: a line a watching process reads as it happens.
    public static func stdout(_ text: String) { write(text, to: 1) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes {
                Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset)
            }
            if n <= 0 { return }
            offset += n
        }
    }
}
