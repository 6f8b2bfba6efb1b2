internal import Glibc

/// The files of one SQLite database on disk and who may read them. In WAL mode a database is three files: the database
/// itself, its write-ahead log (`-wal`) and its shared-memory index (`-shm`); SQLite creates the last two with the
/// database file's permission bits (whatever the umask), so a database file created owner-only keeps all three so.
public enum SQLiteFiles {
    /// The permission bits of a file the wrapper creates: read and write for its owner only.
    public static let ownerOnlyFileMode: UInt32 = 0o600
    /// The permission bits of a folder the gateway creates for a database: its owner only.
    public static let ownerOnlyFolderMode: UInt32 = 0o700

    /// The database file and the two files SQLite keeps beside it in WAL mode.
    public static func paths(of database: String) -> [String] { [database, database + "-wal", database + "-shm"] }

    /// The folder holding `database` ("." for a bare file name).
    public static func folder(of database: String) -> String {
        guard let slash = database.lastIndex(of: "/") else { return "." }
        let folder = String(database[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    /// Creates `path` as an empty file readable and writable by its owner alone (``ownerOnlyFileMode``, set with
    /// `fchmod` after the create, so the umask cannot widen or narrow it). Does nothing when the path exists (a file
    /// keeps the mode it has; a symbolic link is left for SQLite to follow, as it always did) or cannot be created
    /// (SQLite's open then reports why, in its own words).
    static func createOwnerOnly(_ path: String) throws(SQLiteError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(ownerOnlyFileMode))
        guard fd >= 0 else { return }
        defer { close(fd) }
        guard fchmod(fd, mode_t(ownerOnlyFileMode)) == 0 else {
            let reason = String(cString: strerror(errno))
            throw SQLiteError(code: SQLiteError.cantOpenCode, message: "create \(path): cannot make it owner-only: \(reason)")
        }
    }

    /// Creates `folder` and every missing folder above it, each with ``ownerOnlyFolderMode`` whatever the umask;
    /// folders that exist are left as they are. Throws when one cannot be created.
    public static func createFolder(_ folder: String) throws(SQLiteError) {
        var prefix = folder.hasPrefix("/") ? "/" : ""
        for component in folder.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            guard component != ".", component != ".." else { continue }
            if mkdir(prefix, mode_t(ownerOnlyFolderMode)) == 0 {
                // mkdir applied the umask; the mode is set as it was meant.
                _ = chmod(prefix, mode_t(ownerOnlyFolderMode))
            } else if errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw SQLiteError(code: SQLiteError.cantOpenCode, message: "create folder \(prefix): \(reason)")
            }
        }
    }

    /// Of the database's files (those that exist) and its folder, the ones its owner's group or anyone else may read,
    /// each with its permission bits: what a warning about a store others can read names.
    public static func readableByOthers(database: String) -> [(path: String, mode: UInt32)] {
        (paths(of: database) + [folder(of: database)]).compactMap { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            let mode = UInt32(info.st_mode) & 0o7777
            return mode & 0o044 != 0 ? (path, mode) : nil
        }
    }
}
