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
            throw SQLiteError(
                code: SQLiteError.cantOpenCode,
                message: "create \(path): cannot make it owner-only: \(reason)"
            )
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

    /// Whether `a` and `b` name the same database file, whatever their text says: the same device and inode when both
    /// exist (a symbolic link, a hard link, `..`, `.` or a doubled slash cannot hide it), otherwise the same
    /// ``resolvedPath(_:)`` — for a file not created yet, its folder's real path and its name (a dangling symbolic link
    /// followed to what it would create).
    public static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        if stat(a, &first) == 0, stat(b, &second) == 0 {
            return first.st_dev == second.st_dev && first.st_ino == second.st_ino
        }
        return resolvedPath(a) == resolvedPath(b)
    }

    /// `path` made absolute (from the working folder), with every symbolic link resolved as far as the path exists
    /// (`realpath`), a dangling link followed to its target, and `.`, `..` and doubled slashes removed from the part
    /// that does not exist yet.
    public static func resolvedPath(_ path: String) -> String {
        resolved(path.hasPrefix("/") ? path : workingFolder() + "/" + path, links: 0)
    }

    /// At most this many dangling symbolic links are followed (like the kernel's limit on a path's links).
    private static let linkLimit = 40

    private static func resolved(_ path: String, links: Int) -> String {
        if let real = realpath(path, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        var info = stat()
        if links < linkLimit, lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK, let target = linkTarget(path) {
            return resolved(target.hasPrefix("/") ? target : folder(of: path) + "/" + target, links: links + 1)
        }
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        let name = trimmed[trimmed.index(after: slash)...]
        let parent = resolved(slash == trimmed.startIndex ? "/" : String(trimmed[..<slash]), links: links)
        switch name {
        case "", ".": return parent
        case "..": return folder(of: parent)
        default: return parent == "/" ? "/" + name : parent + "/" + name
        }
    }

    private static func linkTarget(_ path: String) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX)) { buffer -> String? in
            guard let base = buffer.baseAddress else { return nil }
            let length = readlink(path, base, buffer.count)
            guard length > 0 else { return nil }
            return String(decoding: UnsafeRawBufferPointer(start: base, count: length), as: UTF8.self)
        }
    }

    private static func workingFolder() -> String {
        guard let folder = getcwd(nil, 0) else { return "." }
        defer { free(folder) }
        return String(cString: folder)
    }
}
