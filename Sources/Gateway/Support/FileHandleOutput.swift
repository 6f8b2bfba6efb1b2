#if canImport(Glibc)
import Glibc
#endif

/// Writes to standard error without touching C globals (`stderr` is not concurrency-safe in Swift 6).
public enum FileHandleOutput {
    public static func stderr(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return }
            offset += n
        }
    }
}
