internal import FoundationEssentials
public import SQLite
internal import Threads

/// The store on SQLite, the embedded default: one file in WAL mode, one writer thread with group commit
/// (``JournalWriter``), reader connections for everything else.
public final class SQLiteStore: GatewayStore {
    public struct Options: Sendable {
        /// `full` (the default) fsyncs every commit: "journaled" means on disk.
        public var synchronous: SQLiteDatabase.Options.Synchronous = .full
        /// Injected storage faults (tests of a full disk).
        public var faults: StorageFaults?
        /// Most pages the file may grow to (nil: SQLite's default).
        public var maxPageCount: Int64?
        /// Whether a missing file (and folder) is created: `serve`'s store and `migrate-store`'s target are; every
        /// other command opens a store that exists or refuses (``StoreNotFound``), so a mistyped path never answers
        /// from an empty store made on the spot.
        public var createsMissing = true
        public init() {}
    }

    let database: SQLiteDatabase
    let writer: JournalWriter<SQLiteDatabase>
    /// The V2 bodies' preset dictionaries, shared by the writer and the readers.
    let dictionaries = BlobDictionaries()

    /// Opens (creating it and its folder) the store file and applies the schema's migrations. A file or folder created
    /// here is its owner's alone (files 0600, folders 0700, whatever the umask); existing ones keep their mode
    /// (``readableByOthers(path:)`` names those that others can read).
    public init(path: String, options: Options = .init()) throws {
        guard options.createsMissing || FileManager.default.fileExists(atPath: path) else {
            throw StoreNotFound(path: path)
        }
        // A folder that cannot be made is reported by the open below, in SQLite's words.
        try? SQLiteFiles.createFolder(SQLiteFiles.folder(of: path))
        var o = SQLiteDatabase.Options()
        o.synchronous = options.synchronous
        o.faults = options.faults
        o.maxPageCount = options.maxPageCount
        o.functions = [StoredBlob.sqliteFunction]
        database = try SQLiteDatabase(path: path, options: o)
        try database.migrate(StoreSchema.sqlite)
        writer = JournalWriter(db: database)
    }

    public var path: String { database.path }

    /// The store's files (the database, its `-wal` and `-shm`) and its folder that its owner's group or anyone else can
    /// read, with their permission bits. They hold every notification body; `serve` warns about each.
    public static func readableByOthers(path: String) -> [(path: String, mode: UInt32)] {
        SQLiteFiles.readableByOthers(database: path)
    }

    /// Whether two paths name one SQLite file, by the file and not the text: `sub/../gw.db`, a symbolic link to the
    /// file or to its folder, a hard link — whether or not the file exists yet (``SQLiteFiles/sameFile(_:_:)``).
    public static func sameFile(_ a: String, _ b: String) -> Bool { SQLiteFiles.sameFile(a, b) }

    /// The most the write-ahead log may hold between two checkpoints: its working size (what it is truncated to when
    /// it is reset) plus the largest transaction the writer takes, which can land in it before the checkpoint that
    /// follows. Beyond its working size the log is space borrowed for a moment, given back at its next reset.
    public static var walBoundBytes: Int64 {
        SQLiteDatabase.Options().walSizeLimitBytes + Int64(JournalWriter<SQLiteDatabase>.defaultMaxBatchBytes)
    }

    public func write<T: Sendable>(
        bytes: Int,
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) throws -> T {
        let dictionaries = self.dictionaries
        return try writer.perform(bytes: bytes) { c in
            try body(SQLiteTransaction(c, dictionaries: dictionaries, committed: false))
        }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let dictionaries = self.dictionaries
        return try await writer.performAsync { c in
            try body(SQLiteTransaction(c, dictionaries: dictionaries, committed: false))
        }
    }

    public func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try database.readTransaction { c in try body(SQLiteTransaction(c, dictionaries: dictionaries, committed: true))
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let (database, dictionaries) = (self.database, self.dictionaries)
        return try await Blocking.run {
            try database.readTransaction { c in
                try body(SQLiteTransaction(c, dictionaries: dictionaries, committed: true))
            }
        }
    }

    public var isClosing: Bool { writer.isStopping }

    /// One process serves an SQLite file (other processes only run one-shot operator commands on it).
    public var sharedByInstances: Bool { false }

    public func close() {
        writer.stop()
        database.close()
    }

    /// (transactions committed, work items committed) since open: how well group commit batches.
    public var commitStatistics: (batches: Int, items: Int) { writer.statistics }

    // MARK: SQLite maintenance

    /// Copies the write-ahead log into the file and truncates it.
    public func checkpointAndTruncate() throws { try database.checkpointAndTruncate() }

    /// Zeroes every free page of the file (they may hold rows deleted before `secure_delete` was on) and truncates
    /// the write-ahead log: a row filling all free pages with zeros is written and dropped with `secure_delete` on,
    /// then the log is checkpointed into the file and truncated. Bytes of rows deleted long ago may still stand in the
    /// unused part of a page reused since; only `VACUUM` rewrites those (docs/operations.md, "Backups"). Every free
    /// page of the file, whichever `table` the scrub rewrote.
    public func eraseFreedSpace(of table: ScrubbedTable) throws {
        try writer.perform(bytes: 0) { c in
            try c.withSecureDelete {
                let pageSize = try c.queryOne("PRAGMA page_size")?.int64("page_size") ?? 4_096
                let free = try c.queryOne("PRAGMA freelist_count")?.int64("freelist_count") ?? 0
                guard free > 0 else { return }
                try c.execute("CREATE TABLE iapgw_erase (b BLOB)")
                _ = try c.run("INSERT INTO iapgw_erase (b) VALUES (zeroblob(?))", [.integer(free * pageSize)])
                try c.execute("DROP TABLE iapgw_erase")
            }
        }
        try database.checkpointAndTruncate()
    }

    /// Caps the file at `pages` pages from now on (a full disk, in tests); returns the cap in force.
    @discardableResult
    public func setMaxPageCount(_ pages: Int64) throws -> Int64 { try database.setMaxPageCount(pages) }
}

extension SQLiteDatabase: GroupCommitDatabase {
    func commitBatch(opening: String?, _ body: (SQLiteConnection) throws -> Void) throws {
        try write { c in
            if let opening { try c.execute(opening) }
            try body(c)
        }
    }
}

extension SQLiteConnection: SavepointConnection {}

/// A store that was to be opened, not created, and is not there: `PATH` names no file.
public struct StoreNotFound: Error, CustomStringConvertible {
    public var path: String
    public var description: String {
        "no store at \(path): only serve creates one (is store.sqlite in the config the store's path?)"
    }
}
