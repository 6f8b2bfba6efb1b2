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
        return packed.count < plain.count || Deflate.looksCompressed(plain) || plain.first == dictionaryMarker
            ? packed : plain
    }

    /// The plain value of a stored one; nil when it is a zlib stream that does not decompress (a damaged file) or
    /// one whose dictionary is not in `dictionaries` (by id, ``BlobDictionaries``): the row then reads as if the value
    /// were missing, never as compressed bytes.
    static func unpack(_ stored: [UInt8], dictionaries: [Int64: [UInt8]] = [:]) -> [UInt8]? {
        if let id = dictionaryID(stored) {
            guard let dictionary = dictionaries[id] else { return nil }
            return try? Deflate.decompress(
                Array(stored[dictionaryHeaderBytes...]),
                dictionary: dictionary,
                limit: maxPlainBytes
            )
        }
        guard Deflate.looksCompressed(stored) else { return stored }
        return try? Deflate.decompress(stored, limit: maxPlainBytes)
    }

    // MARK: Preset dictionaries

    /// The first byte of a value compressed with a preset dictionary: the byte, then the dictionary's id (4 bytes,
    /// big-endian, a row of `blob_dictionaries`), then the zlib stream. Neither 0x78 nor a byte JSON can start with
    /// (0xD1 is no ASCII character, and not a UTF-8 lead byte of a JSON value's first character either).
    static let dictionaryMarker: UInt8 = 0xD1
    static let dictionaryHeaderBytes = 5

    /// The dictionary id a stored value names; nil for plain and 0x78 values.
    static func dictionaryID(_ stored: [UInt8]) -> Int64? {
        guard stored.count > dictionaryHeaderBytes, stored[0] == dictionaryMarker else { return nil }
        return stored[1..<dictionaryHeaderBytes].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// `body` compressed with `dictionary` (the dictionary of the row `id`), marked as such; as ``pack(_:)`` when
    /// that is not smaller than `body` (or the id does not fit the marker's 4 bytes).
    static func pack(_ body: [UInt8], dictionaryID id: Int64, dictionary: [UInt8]) -> [UInt8] {
        pack(body, dictionaryID: id) { (b) throws(DeflateError) in
            try Deflate.compress(b, dictionary: dictionary, level: level)
        }
    }

    /// As ``pack(_:dictionaryID:dictionary:)``, with a compressor primed with the dictionary (``primed(_:)``).
    static func pack(_ body: [UInt8], dictionaryID id: Int64, compressor: Deflate.Primed) -> [UInt8] {
        pack(body, dictionaryID: id) { (b) throws(DeflateError) in try compressor.compress(b) }
    }

    /// A compressor primed with `dictionary` at the store's level; nil when zlib cannot make one (no memory).
    static func primed(_ dictionary: [UInt8]) -> Deflate.Primed? {
        try? Deflate.Primed(dictionary: dictionary, level: level)
    }

    private static func pack(
        _ body: [UInt8],
        dictionaryID id: Int64,
        compress: ([UInt8]) throws(DeflateError) -> [UInt8]
    ) -> [UInt8] {
        // With its dictionary a value is smaller than with zlib alone: the one compression, unless it does not pay.
        guard let id32 = UInt32(exactly: id), let stream = try? compress(body),
            stream.count + dictionaryHeaderBytes < body.count
        else { return pack(body) }
        return [
            dictionaryMarker, UInt8(id32 >> 24), UInt8(id32 >> 16 & 0xFF), UInt8(id32 >> 8 & 0xFF), UInt8(id32 & 0xFF),
        ]
            + stream
    }

    /// The outer JWS header H of a V2 body `{"signedPayload":"H.P.S"…`: the bytes between the prefix and the first
    /// '.', base64url only; nil for any other value (or a header too short to be worth a dictionary, or too long
    /// for its dictionary to fit zlib's window).
    static func v2Header(_ body: [UInt8]) -> [UInt8]? {
        guard body.starts(with: v2Prefix) else { return nil }
        let rest = body[v2Prefix.count...]
        guard let dot = rest.prefix(maxHeaderBytes + 1).firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let header = rest[..<dot]
        guard header.count >= minHeaderBytes, header.allSatisfy({ base64URLValue[Int($0)] != 0xFF }) else { return nil }
        return Array(header)
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

    /// `iapgw_deflate(value)`: the migration that compresses the rows written before (``StoreSchema``, SQLite 11).
    /// A value already compressed (with or without a dictionary) is returned as it is.
    static let sqliteFunction = SQLiteFunction(name: "iapgw_deflate") { value in
        Deflate.looksCompressed(value) || dictionaryID(value) != nil ? value : pack(value)
    }
}
