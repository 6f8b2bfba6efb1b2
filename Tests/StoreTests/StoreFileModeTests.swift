import Canonical
import Foundation
import Glibc
import Store
import TestSupport
import Testing

/// The SQLite store's files hold every notification body and subscription: a store the gateway creates is readable by
/// its owner only, whatever the umask — its file, the write-ahead log and shared-memory files, and any folder the
/// gateway makes for it. `.serialized`: the umask is the whole process's; each test sets it and puts it back.
@Suite(.serialized) struct StoreFileModeTests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    static func octal(_ mode: mode_t?) -> String { mode.map { "0" + String($0, radix: 8) } ?? "missing" }

    @Test func aNewStoreAndTheFoldersMadeForItAreOwnerOnlyUnderUmask022() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let scratch = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let scratchMode = Self.mode(scratch)
        let path = scratch + "/state/data/gw.db"
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let wanted = [
            AuthorityEntry(bundleID: "com.example.gateway", environment: .production, authority: .v2, origin: .config)
        ]
        _ = try store.write { tx in try tx.seedAuthority(wanted, now: 1) }
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(Self.mode(file) == 0o600, "\(file) is \(Self.octal(Self.mode(file)))")
        }
        for folder in [scratch + "/state", scratch + "/state/data"] {
            #expect(Self.mode(folder) == 0o700, "\(folder) is \(Self.octal(Self.mode(folder)))")
        }
        #expect(Self.mode(scratch) == scratchMode, "a folder that existed was changed")
    }
}
