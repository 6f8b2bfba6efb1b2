internal import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Throw-away folders under the system temporary directory. Every folder made here is removed when the test process
/// exits normally, so a suite leaves nothing behind even where a test hands its folder to something that outlives it
/// (a harness value copied around, a gateway process); a test that is done with one sooner removes it itself.
public enum Scratch {
    private static let made = Mutex<[String]>([])
    private static let removedAtExit: Void = { atexit { Scratch.removeAll() } }()

    /// A new empty folder, removed at the latest when the process exits.
    public static func directory(_ prefix: String = "iapgw") throws -> String {
        _ = removedAtExit
        let url = FileManager.default.temporaryDirectory.appending(
            path: "\(prefix)-\(UInt64.random(in: 0...UInt64.max))"
        )
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        made.withLock { $0.append(url.path()) }
        return url.path()
    }

    /// Runs `body` with a fresh folder and removes it afterwards.
    public static func withDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try await body(dir)
    }

    private static func removeAll() {
        for folder in made.withLock({ $0 }) {
            try? FileManager.default.removeItem(atPath: folder)
        }
    }
}
