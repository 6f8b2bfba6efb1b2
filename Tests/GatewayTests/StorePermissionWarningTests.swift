import Foundation
import Gateway
import Glibc
import TestSupport
import Testing
import WireJSON

/// `serve` and a store others can read: it says so, path and mode, once per file or folder, and serves anyway.
@Suite(.serialized) struct StorePermissionWarningTests {
    typealias Service = GatewayServiceTests

    /// The `store readable by others` warnings logged: path → mode.
    static func warnings(_ logs: Service.LogBox) throws -> [String: String] {
        var found: [String: String] = [:]
        for line in logs.all {
            guard let object = try JSONParser.parse(Array(line.utf8)).objectValue,
                object["msg"] == .string("store readable by others")
            else { continue }
            #expect(object["level"] == .string("warn"))
            if case .string(let path)? = object["path"], case .string(let mode)? = object["mode"] { found[path] = mode }
        }
        return found
    }

    @Test func serveWarnsAboutAnExistingStoreFileAndFolderOthersCanReadAndStillServes() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let logs = Service.LogBox()
        let g = try Service.start(receiver: receiver, logs: logs) { config, _ in
            let folder = URL(filePath: config.sqlitePath).deletingLastPathComponent().path()
            _ = chmod(folder, 0o755)
            _ = FileManager.default.createFile(
                atPath: config.sqlitePath,
                contents: nil,
                attributes: [.posixPermissions: 0o644]
            )
        }
        #expect(try await Service.get(g.url("/healthz")).status == 200)
        let path = g.service.config.sqlitePath
        let folder = URL(filePath: path).deletingLastPathComponent().path()
        let warned = try Self.warnings(logs)
        #expect(warned[path] == "0644", "\(warned)")
        #expect(warned[Self.trimmed(folder)] == "0755", "\(warned)")
        // SQLite gives the write-ahead log and shared memory the main file's mode: they are named too.
        #expect(warned[path + "-wal"] == "0644" && warned[path + "-shm"] == "0644", "\(warned)")
        #expect(warned.count == 4)
        await g.service.shutdown()
    }

    @Test func aStoreOnlyItsOwnerCanReadGetsNoWarning() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let logs = Service.LogBox()
        let g = try Service.start(receiver: receiver, logs: logs) { config, _ in
            _ = chmod(URL(filePath: config.sqlitePath).deletingLastPathComponent().path(), 0o700)
        }
        #expect(try Self.warnings(logs).isEmpty, "\(logs.all)")
        await g.service.shutdown()
    }

    /// `path` without a trailing slash (URL's folder paths end with one).
    static func trimmed(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}
