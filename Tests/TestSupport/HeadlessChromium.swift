public import Foundation
import Glibc

/// Headless Chromium for tests that look at a page the way a browser shows it (the HTML report). Chromium is required
/// (Debian's `chromium` package, which `scripts/test` installs); without it these tests fail rather than skip.
public enum HeadlessChromium {
    /// `$CHROMIUM`, else Debian's path.
    public static func executable() throws -> String {
        let candidates = [
            ProcessInfo.processInfo.environment["CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser",
        ]
        guard
            let path = candidates.compactMap({ $0 }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw Missing()
        }
        return path
    }

    public struct Missing: Error, CustomStringConvertible {
        public var description: String {
            "headless Chromium is required for the HTML report tests: install it with `apt-get install -y chromium` "
                + "(or set CHROMIUM=/path/to/chromium)"
        }
    }

    public struct Run: Sendable {
        public var status: Int32
        public var timedOut: Bool
        public var stdout: String
        public var stderr: String
        public var elapsed: Duration
    }

    /// Flags for a quiet, offline, throw-away browser: its own profile folder, nothing fetched in the background.
    public static func flags(profile: String) -> [String] {
        [
            "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile)", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync", "--disable-default-apps", "--disable-domain-reliability", "--no-pings",
            "--disable-breakpad",
            "--disable-dev-shm-usage", "--hide-scrollbars",
        ]
    }

    /// With these flags the page's console, Content Security Policy violations included (`Refusing to apply inline
    /// style because it violates the following Content Security Policy directive …`), goes to standard error.
    public static let consoleToStderr = ["--enable-logging=stderr", "--v=0"]

    /// Runs `executable` with its output in files (so a large DOM never blocks on a pipe), polling without blocking a
    /// thread, and kills it after `timeout`.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        in dir: URL,
        timeout: Duration = .seconds(60)
    ) async throws -> Run {
        let tag = UUID().uuidString
        let outURL = dir.appending(path: "stdout-\(tag)")
        let errURL = dir.appending(path: "stderr-\(tag)")
        _ = FileManager.default.createFile(atPath: outURL.path(), contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path(), contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = URL(filePath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let clock = ContinuousClock()
        let start = clock.now
        try process.run()
        var timedOut = false
        while process.isRunning {
            if clock.now - start > timeout {
                timedOut = true
                process.terminate()
                try await Task.sleep(for: .seconds(2))
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            timedOut: timedOut,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self),
            elapsed: clock.now - start
        )
    }
}
