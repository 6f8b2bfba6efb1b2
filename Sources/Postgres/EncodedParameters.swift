internal import CPostgres

/// Parameters laid out for `PQexecParams` / `PQexecPrepared`: one buffer holding every value (text NUL-terminated),
/// with each parameter's offset, length, format (0 text, 1 binary) and type OID (0: the server infers it).
struct EncodedParameters {
    private(set) var types: [Oid] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    /// nil: SQL NULL.
    private var offsets: [Int?] = []
    private var storage: [UInt8] = []

    // Built-in type OIDs (pg_type.dat): stable across PostgreSQL versions.
    static let boolOID: Oid = 16
    static let byteaOID: Oid = 17
    static let int8OID: Oid = 20
    static let int2OID: Oid = 21
    static let int4OID: Oid = 23
    static let oidOID: Oid = 26
    static let float4OID: Oid = 700
    static let float8OID: Oid = 701

    var count: Int { types.count }

    init(_ values: [PostgresValue], label: String, sql: String) throws(PostgresError) {
        for (index, value) in values.enumerated() {
            switch value {
            case .null:
                append(nil, type: 0, binary: false)
            case .int64(let v):
                append(Array(String(v).utf8), type: Self.int8OID, binary: false)
            case .bool(let v):
                append([v ? UInt8(ascii: "t") : UInt8(ascii: "f")], type: Self.boolOID, binary: false)
            case .double(let v):
                let text = v.isNaN ? "NaN" : v == .infinity ? "Infinity" : v == -.infinity ? "-Infinity" : "\(v)"
                append(Array(text.utf8), type: Self.float8OID, binary: false)
            case .text(let v):
                let bytes = Array(v.utf8)
                // Text parameters are NUL-terminated for libpq: a NUL inside would silently cut the value short.
                guard !bytes.contains(0) else {
                    throw PostgresError(
                        code: "22021",
                        message: "\(label): query `\(sql)`: parameter \(index + 1) is text holding a NUL byte, which "
                            + "PostgreSQL text cannot store (use bytea)"
                    )
                }
                append(bytes, type: 0, binary: false)
            case .bytea(let v):
                guard v.count <= Int(Int32.max) else {
                    throw PostgresError(
                        code: "54000",
                        message: "\(label): query `\(sql)`: parameter \(index + 1) is over 2 GiB"
                    )
                }
                append(v, type: Self.byteaOID, binary: true)
            }
        }
        storage.append(0)  // never empty, so a zero-length binary value still points into it (NULL would mean NULL)
    }

    private mutating func append(_ bytes: [UInt8]?, type: Oid, binary: Bool) {
        types.append(type)
        formats.append(binary ? 1 : 0)
        guard let bytes else {
            offsets.append(nil)
            lengths.append(0)
            return
        }
        offsets.append(storage.count)
        lengths.append(Int32(bytes.count))
        storage.append(contentsOf: bytes)
        if !binary { storage.append(0) }
    }

    /// Calls `body` with the C arrays, valid for the call only.
    func withArguments<R>(
        _ body: (
            UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        storage.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                let base = chars.baseAddress!  // storage is never empty
                let pointers: [UnsafePointer<CChar>?] = offsets.map { $0.map { UnsafePointer(base + $0) } }
                return pointers.withUnsafeBufferPointer { pointers in
                    types.withUnsafeBufferPointer { types in
                        lengths.withUnsafeBufferPointer { lengths in
                            formats.withUnsafeBufferPointer { formats in
                                body(types.baseAddress, pointers.baseAddress, lengths.baseAddress, formats.baseAddress)
                            }
                        }
                    }
                }
            }
        }
    }
}
