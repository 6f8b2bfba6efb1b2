internal import FoundationEssentials

/// Throw-away folders under the system temporary directory.
public enum Scratch {
    /// A new empty folder; the caller removes it (or leaves it to the OS) — tests use ``withDirectory(_:)``.
    public static func directory(_ prefix: String = "iapgw") throws -> String {
        let url = FileManager.default.temporaryDirectory.appending(path: "\(prefix)-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path()
    }

    /// Runs `body` with a fresh folder and removes it afterwards.
    public static func withDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try await body(dir)
    }
}
