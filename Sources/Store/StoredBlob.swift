internal import SQLite
internal import Zlib
internal import Zstd

/// The large blobs of both stores — `journal.body`, `events.json`, `subscription_state.json`, `snapshots.json`,
/// `compare_ledger.v1_json` and `v2_json`, `receipt_ledger`'s and `receipt_histories.json` — as they are on disk:
/// compressed when that is smaller, as they are otherwise (``StoreValue/compressible(_:)``,
/// ``StoreRow/stored(_:as:)``; PostgreSQL since its migration 17, which compresses the rows stored before once,
/// ``PostgresCompaction``). Every reader above the rows — deliveries, the team's database, replay, `subscription` —
/// sees the plain bytes; `migrate-store` copies the stored bytes as they are, with the dictionaries they name.
///
/// A stored value is told by its first bytes; the plain values are JSON, which starts with none of them (and a plain
/// value that did would be stored compressed whatever its size):
///
/// | starts with | what it is | written |
/// |---|---|---|
/// | 28 B5 2F FD | a Zstandard frame (``Zstd``) | now |
/// | D2, a dictionary id (4 bytes, big-endian) | a Zstandard frame written with that preset dictionary | now |
/// | 78 | a zlib stream (``Deflate``) | before zstd; still read |
/// | D1, a dictionary id | a zlib stream with that preset dictionary | before zstd; still read |
/// | anything else | the value itself | when compression does not pay |
///
/// Rows of every format are read: a store is never rewritten to change format (the dictionaries, by id, are the same
/// for both: ``BlobDictionaries``). A PostgreSQL store's values are all of the formats written "now" (or plain, from
/// an older gateway), and the zlib ones `migrate-store` copied from an SQLite store.
enum StoredBlob {
    /// zstd's fastest standard level: the values are compressed on the store's one writer thread (docs/performance.md
    /// compares the writer's CPU per notification with zlib's level 1 and with this).
    static let level = Zstd.defaultLevel

    /// The compressor of values without a dictionary (V1 bodies, values written before the JSON dictionary exists).
    private static let plainCompressor = try? Zstd.Compressor(dictionary: nil, level: level)

    /// The value as the stores keep it without a dictionary.
    static func pack(_ plain: [UInt8]) -> [UInt8] {
        guard !plain.isEmpty, let packed = try? (plainCompressor ?? Zstd.Compressor(dictionary: nil)).compress(plain)
        else { return plain }
        return packed.count < plain.count || looksStored(plain) ? packed : plain
    }

    /// Whether `value` starts like a compressed value of any format: a plain value that does must not be stored
    /// as it is.
    static func looksStored(_ value: [UInt8]) -> Bool {
        Zstd.looksCompressed(value) || Deflate.looksCompressed(value)
            || value.first == zstdDictionaryMarker || value.first == zlibDictionaryMarker
    }

    /// The plain value of a stored one; nil when it reads as damaged (``read(_:as:dictionaries:)``).
    static func unpack(
        _ stored: [UInt8],
        as column: StoredColumn = .body,
        dictionaries: [Int64: [UInt8]] = [:]
    ) -> [UInt8]? {
        read(stored, as: column, dictionaries: dictionaries).bytes
    }

    /// The plain value of a stored value of `column`, or how it is damaged: compressed and larger than the column's
    /// cap (``StoredColumn/maxPlainBytes``: decompression stops there, so a small frame that would expand to
    /// gigabytes costs at most the cap), plain and larger than the cap, compressed and not decompressing, or naming a
    /// dictionary that is not in `dictionaries` (by id, ``BlobDictionaries``) — never the compressed bytes.
    static func read(
        _ stored: [UInt8],
        as column: StoredColumn,
        dictionaries: [Int64: [UInt8]] = [:]
    ) -> StoredRead {
        read(stored, limit: column.maxPlainBytes, dictionaries: dictionaries)
    }

    /// What `migrate-store` reads a value within: it moves every value as it is, one within its column's cap or not
    /// (a row an older gateway wrote before the caps), and refuses only what could not be a value at all. The bound
    /// every value had before the caps.
    static let maxCopiedBytes = 64 * 1_048_576

    /// As ``read(_:as:dictionaries:)``, within `limit` bytes.
    static func read(_ stored: [UInt8], limit: Int, dictionaries: [Int64: [UInt8]] = [:]) -> StoredRead {
        if let (id, zstd) = dictionaryReference(stored) {
            guard let dictionary = dictionaries[id] else { return .damaged(.corrupt) }
            let rest = Array(stored[dictionaryHeaderBytes...])
            return zstd
                ? zstdRead { () throws(ZstdError) in try Zstd.decompress(rest, dictionary: dictionary, limit: limit) }
                : zlibRead { () throws(DeflateError) in
                    try Deflate.decompress(rest, dictionary: dictionary, limit: limit)
                }
        }
        if Zstd.looksCompressed(stored) {
            return zstdRead { () throws(ZstdError) in try Zstd.decompress(stored, limit: limit) }
        }
        if Deflate.looksCompressed(stored) {
            return zlibRead { () throws(DeflateError) in try Deflate.decompress(stored, limit: limit) }
        }
        return stored.count <= limit ? .value(stored) : .damaged(.tooLarge)
    }

    private static func zstdRead(_ body: () throws(ZstdError) -> [UInt8]) -> StoredRead {
        do { return .value(try body()) } catch { return .damaged(error.code == .tooLarge ? .tooLarge : .corrupt) }
    }

    private static func zlibRead(_ body: () throws(DeflateError) -> [UInt8]) -> StoredRead {
        do { return .value(try body()) } catch { return .damaged(error.code == .tooLarge ? .tooLarge : .corrupt) }
    }

    // MARK: Preset dictionaries

    /// The first byte of a value compressed with a preset dictionary: the byte, then the dictionary's id (4 bytes,
    /// big-endian, a row of `blob_dictionaries`), then the compressed value: a Zstandard frame after 0xD2, a zlib
    /// stream after 0xD1 (written before zstd). Neither is a byte JSON can start with (no ASCII character, and not
    /// a UTF-8 lead byte of a JSON value's first character either), nor the first byte of a frame or a zlib stream.
    static let zstdDictionaryMarker: UInt8 = 0xD2
    static let zlibDictionaryMarker: UInt8 = 0xD1
    static let dictionaryHeaderBytes = 5

    /// The dictionary id a stored value names (and whether it is a zstd frame); nil for values without one.
    static func dictionaryReference(_ stored: [UInt8]) -> (id: Int64, zstd: Bool)? {
        guard stored.count > dictionaryHeaderBytes,
            stored[0] == zstdDictionaryMarker || stored[0] == zlibDictionaryMarker
        else { return nil }
        return (
            stored[1..<dictionaryHeaderBytes].reduce(Int64(0)) { $0 << 8 | Int64($1) },
            stored[0] == zstdDictionaryMarker
        )
    }

    /// The dictionary id a stored value names; nil for values without one.
    static func dictionaryID(_ stored: [UInt8]) -> Int64? { dictionaryReference(stored)?.id }

    /// `body` compressed with `dictionary` (the dictionary of the row `id`), marked as such; as ``pack(_:)`` when
    /// that is not smaller than `body` (or the id does not fit the marker's 4 bytes). Digests the dictionary for this
    /// one value: a writer keeps a compressor instead (``compressor(_:)``).
    static func pack(_ body: [UInt8], dictionaryID id: Int64, dictionary: [UInt8]) -> [UInt8] {
        guard let compressor = compressor(dictionary) else { return pack(body) }
        return pack(body, dictionaryID: id, compressor: compressor)
    }

    /// As ``pack(_:dictionaryID:dictionary:)``, with a compressor made with the dictionary (``compressor(_:)``).
    static func pack(_ body: [UInt8], dictionaryID id: Int64, compressor: Zstd.Compressor) -> [UInt8] {
        // With its dictionary a value is smaller than without: the one compression, unless it does not pay.
        guard let id32 = UInt32(exactly: id), let frame = try? compressor.compress(body),
            frame.count + dictionaryHeaderBytes < body.count
        else { return pack(body) }
        return [
            zstdDictionaryMarker, UInt8(id32 >> 24), UInt8(id32 >> 16 & 0xFF), UInt8(id32 >> 8 & 0xFF),
            UInt8(id32 & 0xFF),
        ]
            + frame
    }

    /// A compressor with `dictionary` at the store's level; nil when zstd cannot make one (no memory).
    static func compressor(_ dictionary: [UInt8]) -> Zstd.Compressor? {
        try? Zstd.Compressor(dictionary: dictionary, level: level)
    }

    /// The outer JWS header H of a V2 body `{"signedPayload":"H.P.S"…`: the bytes between the prefix and the first
    /// '.', base64url only; nil for any other value (or a header too short to be worth a dictionary, or too long
    /// for its dictionary to fit zlib's window).
    static func v2Header(_ body: [UInt8]) -> [UInt8]? {
        guard body.starts(with: v2Prefix) else { return nil }
        let rest = body[v2Prefix.count...]
        guard let dot = rest.prefix(maxHeaderBytes + 1).firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let header = rest[..<dot]
        guard header.count >= minHeaderBytes else { return nil }
        let values = base64URLValue  // once, not behind the static's once-check for every byte
        let isBase64URL = values.withUnsafeBufferPointer { v in header.allSatisfy { v[Int($0)] != 0xFF } }
        return isBase64URL ? Array(header) : nil
    }

    static let v2Prefix = Array(#"{"signedPayload":""#.utf8)
    /// Apple's headers are about 4.4 KB (three certificates); the dictionary is about five times the header.
    static let minHeaderBytes = 256
    static let maxHeaderBytes = 6_400

    /// The dictionary of a header H: H, then H's bytes base64url-encoded at each of the three alignments they can
    /// have inside P (`a` filler bytes before H, a = 0, 1, 2, and for a > 0 the first 4 characters, which depend on
    /// the filler, dropped) — the inner JWS headers as they appear in the payload. At most zlib's window, its end kept.
    static func dictionary(header: ArraySlice<UInt8>) -> [UInt8] {
        // A JSON dictionary (``BlobDictionaries/packJSON(_:on:)``) is its own source.
        if header.first == UInt8(ascii: "{") { return Array(header.suffix(Deflate.maxDictionaryBytes)) }
        var out = Array(header)
        for a in 0..<3 {
            let encoded = base64URL([UInt8](repeating: 0, count: a) + header)
            out += a == 0 ? encoded[...] : encoded.dropFirst(4)
        }
        return Array(out.suffix(Deflate.maxDictionaryBytes))
    }

    static func dictionary(header: [UInt8]) -> [UInt8] { dictionary(header: header[...]) }

    private static let base64URLAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8
    )
    private static let base64URLValue: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in base64URLAlphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// Unpadded base64url.
    static func base64URL(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i])
            let b1 = n > 1 ? UInt32(bytes[i + 1]) : 0
            let b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            for k in 0...n { out.append(base64URLAlphabet[Int(v >> UInt32(18 - 6 * k) & 0x3F)]) }
            i += 3
        }
        return out
    }

    /// `iapgw_deflate(value)`: the migration that compresses the rows written before compression (``StoreSchema``,
    /// SQLite 11; the name is the migration's, whatever the format). A value already compressed, in any format, is
    /// returned as it is.
    static let sqliteFunction = SQLiteFunction(name: "iapgw_deflate") { value in
        Zstd.looksCompressed(value) || Deflate.looksCompressed(value) || dictionaryReference(value) != nil
            ? value : pack(value)
    }
}
