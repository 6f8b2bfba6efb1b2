import Foundation
import Glibc
import SQLite
import Testing

/// The files of a database the wrapper creates are its owner's alone, whatever the process's umask: the main file,
/// and the write-ahead log and shared-memory files SQLite makes beside it with the main file's permissions.
/// `.serialized`: the umask is the whole process's; each test sets it and puts it back.
@Suite(.serialized) struct SQLiteFileModeTests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    static func octal(_ mode: mode_t?) -> String { mode.map { "0" + String($0, radix: 8) } ?? "missing" }

    @Test(arguments: [0o022, 0o002, 0o000, 0o077, 0o277] as [mode_t])
    func aNewDatabaseAndItsWALFilesAreCreatedOwnerOnly(_ mask: mode_t) async throws {
        try await SQLiteDatabaseTests.withTemporaryDirectory { directory in
            let previous = umask(mask)
            defer { umask(previous) }
            let path = directory + "/new.db"
            let db = try SQLiteDatabase(path: path)
            defer { db.close() }
            try db.write { c in
                try c.execute("CREATE TABLE t(a TEXT)")
                try c.run("INSERT INTO t(a) VALUES (?)", [.text("x")])
            }
            for file in [path, path + "-wal", path + "-shm"] {
                #expect(
                    Self.mode(file) == 0o600,
                    "\(file) is \(Self.octal(Self.mode(file))) under umask \(Self.octal(mask))"
                )
            }
        }
    }

    @Test func anExistingFilesModeIsLeftAsItIs() async throws {
        try await SQLiteDatabaseTests.withTemporaryDirectory { directory in
            let path = directory + "/existing.db"
            #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o640]))
            let db = try SQLiteDatabase(path: path)
            defer { db.close() }
            try db.write { try $0.execute("CREATE TABLE t(a TEXT)") }
            #expect(Self.mode(path) == 0o640)
        }
    }
}
