internal import SQLite
internal import Zlib

/// The large blobs of the SQLite store — `journal.body`, `events.json`, `subscription_state.json`, `snapshots.json`,
/// `compare_ledger.v1_json` and `v2_json` — as they are on disk: compressed (a zlib stream, ``Deflate``) when that is
/// smaller, as they are otherwise. A stored value that starts with 0x78 is a zlib stream: the plain values are JSON,
/// which never starts with 'x' (and one that did would be stored compressed whatever its size), so rows written before
/// compression still read. PostgreSQL stores them as they are (its TOAST compresses them): the difference is the
/// dialect's (``StoreValue/compressible(_:)``, ``StoreRow/compressible(_:)``), and every reader above the rows —
/// deliveries, the team's database, replay, `subscription`, `migrate-store` — sees the plain bytes.
enum StoredBlob {
    /// The most a stored value decompresses to: far above any body the gateway accepts (1 MiB) or any event it
    /// writes, and a bound on what a corrupt file can make a read allocate.
    static let maxPlainBytes = 64 * 1_048_576

    /// zlib's fastest level: the values are compressed on the store's one writer thread, and on notification bodies
    /// (mostly base64 of signatures and certificates) level 6 saves about 2 % more for about a fifth more time.
    static let level: Int32 = 1

    /// The value as SQLite stores it.
    static func pack(_ plain: [UInt8]) -> [UInt8] {
        guard !plain.isEmpty, let packed = try? Deflate.compress(plain, level: level) else { return plain }
        return packed.count < plain.count || Deflate.looksCompressed(plain) ? packed : plain
    }

    /// The plain value of a stored one; nil when it is a zlib stream that does not decompress (a damaged file): the
    /// row then reads as if the value were missing, never as compressed bytes.
    static func unpack(_ stored: [UInt8]) -> [UInt8]? {
        guard Deflate.looksCompressed(stored) else { return stored }
        return try? Deflate.decompress(stored, limit: maxPlainBytes)
    }

    /// `iapgw_deflate(value)`: the migration that compresses the rows written before (``StoreSchema``, SQLite 11).
    /// A value already compressed is returned as it is.
    static let sqliteFunction = SQLiteFunction(name: "iapgw_deflate") { value in
        Deflate.looksCompressed(value) ? value : pack(value)
    }
}
