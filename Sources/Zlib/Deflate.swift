internal import CZlib
import Glibc
import Synchronization

/// zlib streams (RFC 1950: a two-byte header, DEFLATE data, an Adler-32 trailer), the one place the gateway calls
/// zlib. The SQLite store wrote its values as zlib streams before it wrote Zstandard frames, and still reads them;
/// writing them is kept for the tests that make such a store. A stream this writes starts with the byte 0x78
/// (DEFLATE with a 32 KiB window), which is how a reader tells it from stored JSON (never 'x').
///
/// Decompression is bounded: it stops with ``DeflateError/Code/tooLarge`` before the output exceeds its limit, and
/// input that is corrupt, truncated or followed by other bytes throws, whatever the bytes are — it never traps and
/// never loops without consuming input.
public enum Deflate {
    /// The first byte of every stream ``compress(_:level:)`` writes.
    public static let headerByte: UInt8 = 0x78

    /// The default level (6): most of level 9's ratio on short JSON at a fraction of its time.
    public static let defaultLevel: Int32 = 6

    /// `bytes` as one zlib stream. Throws only when zlib cannot allocate its state (``DeflateError/Code/outOfMemory``)
    /// or the input is beyond zlib's sizes.
    public static func compress(_ bytes: [UInt8], level: Int32 = defaultLevel) throws(DeflateError) -> [UInt8] {
        guard (0...9).contains(level) else { throw DeflateError(.invalidArgument, zlib: Z_STREAM_ERROR) }
        guard let sourceLength = uLong(exactly: bytes.count) else { throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR) }
        guard let inputLength = UInt32(exactly: bytes.count) else { throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR) }
        var stream = ZlibMemory.stream()
        let initRC = gateway_deflate_init(&stream, level)
        guard initRC == Z_OK else { throw DeflateError(initRC) }
        defer { deflateEnd(&stream) }
        return try finish(&stream, bytes, sourceLength: sourceLength, inputLength: inputLength)
    }

    /// The most bytes of a preset dictionary that reach the start of the data: zlib's window (32 KiB) less its
    /// lookahead (262 bytes). A longer dictionary's start is never used (zlib keeps only its end).
    public static let maxDictionaryBytes = 32_768 - 262

    /// `bytes` as one zlib stream with the preset dictionary `dictionary` (RFC 1950's FDICT: the stream names the
    /// dictionary by its Adler-32 and reads back only with ``decompress(_:dictionary:limit:)`` given the same bytes).
    /// Its first byte is 0x78 too. An empty dictionary gives the stream ``compress(_:level:)`` writes.
    public static func compress(
        _ bytes: [UInt8],
        dictionary: [UInt8],
        level: Int32 = defaultLevel
    ) throws(DeflateError) -> [UInt8] {
        guard !dictionary.isEmpty else { return try compress(bytes, level: level) }
        guard (0...9).contains(level) else { throw DeflateError(.invalidArgument, zlib: Z_STREAM_ERROR) }
        guard let sourceLength = uLong(exactly: bytes.count), let inputLength = UInt32(exactly: bytes.count),
            let dictionaryLength = UInt32(exactly: dictionary.count)
        else { throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR) }
        var stream = ZlibMemory.stream()
        let initRC = gateway_deflate_init(&stream, level)
        guard initRC == Z_OK else { throw DeflateError(initRC) }
        defer { deflateEnd(&stream) }
        let dictionaryRC = dictionary.withUnsafeBufferPointer { d in
            deflateSetDictionary(&stream, d.baseAddress, dictionaryLength)
        }
        guard dictionaryRC == Z_OK else { throw DeflateError(dictionaryRC) }
        return try finish(&stream, bytes, sourceLength: sourceLength, inputLength: inputLength)
    }

    /// Runs `stream` (initialized, its dictionary set) over all of `bytes` to the stream's end, in one call.
    fileprivate static func finish(
        _ stream: inout z_stream,
        _ bytes: [UInt8],
        sourceLength: uLong,
        inputLength: UInt32
    ) throws(DeflateError) -> [UInt8] {
        // deflateBound plus the dictionary's id (4 bytes): one call to deflate with Z_FINISH ends the stream.
        let bound = deflateBound(&stream, sourceLength) + 4
        guard let capacity = Int(exactly: bound), let outputLength = UInt32(exactly: bound) else {
            throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR)
        }
        var rc = Z_OK
        let out = [UInt8](unsafeUninitializedCapacity: capacity) { dst, initialized in
            rc = bytes.withUnsafeBufferPointer { src in
                var empty: UInt8 = 0
                return withUnsafeMutablePointer(to: &empty) { fallback in
                    stream.next_in = src.baseAddress.map { UnsafeMutablePointer(mutating: $0) } ?? fallback
                    stream.avail_in = inputLength
                    stream.next_out = dst.baseAddress
                    stream.avail_out = outputLength
                    let rc = deflate(&stream, Z_FINISH)
                    (stream.next_in, stream.next_out) = (nil, nil)
                    return rc
                }
            }
            // What deflate wrote: the buffer's start, never more than its capacity.
            initialized = capacity - Int(stream.avail_out)
        }
        guard rc == Z_STREAM_END, let count = Int(exactly: stream.total_out), count == out.count else {
            throw DeflateError(rc == Z_OK ? Z_BUF_ERROR : rc)
        }
        return out
    }

    /// The bytes of the one zlib stream `bytes` holds, at most `limit` of them. Throws ``DeflateError``:
    /// `corrupt` (not a zlib stream, a bad checksum, bytes after the stream's end, a preset dictionary),
    /// `truncated` (the input ends inside the stream), `tooLarge` (the output would exceed `limit`), `outOfMemory`.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(DeflateError) -> [UInt8] {
        try decompress(bytes, dictionary: nil, limit: limit)
    }

    /// As ``decompress(_:limit:)``, for a stream written with the preset dictionary `dictionary`
    /// (``compress(_:dictionary:level:)``). A stream that names another dictionary (its Adler-32 differs) is
    /// `corrupt`, as is one that names none when `dictionary` is given — so are its bytes with the wrong dictionary.
    public static func decompress(_ bytes: [UInt8], dictionary: [UInt8]?, limit: Int) throws(DeflateError) -> [UInt8] {
        guard limit >= 0 else { throw DeflateError(.invalidArgument, zlib: Z_STREAM_ERROR) }
        guard let inputLength = UInt32(exactly: bytes.count) else { throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR) }
        guard !bytes.isEmpty else { throw DeflateError(.truncated, zlib: Z_BUF_ERROR) }
        guard dictionary.map({ UInt32(exactly: $0.count) != nil }) ?? true else {
            throw DeflateError(.tooLarge, zlib: Z_BUF_ERROR)
        }
        var stream = ZlibMemory.stream()
        let initRC = gateway_inflate_init(&stream)
        guard initRC == Z_OK else { throw DeflateError(initRC) }
        defer { inflateEnd(&stream) }
        var dictionaryUsed = false

        // Output grows by doubling from a guess (JSON deflates to about a fifth), never past limit + 1: one byte more
        // than the limit is enough to know that the stream is larger.
        let ceiling = limit == Int.max ? limit : limit + 1
        var out = [UInt8](
            repeating: 0,
            count: min(ceiling, max(256, bytes.count.multipliedReportingOverflow(by: 4).partialValue))
        )
        var produced = 0
        let result: Result<Void, DeflateError> = bytes.withUnsafeBufferPointer { src in
            guard let base = src.baseAddress else { return .failure(DeflateError(.truncated, zlib: Z_BUF_ERROR)) }
            stream.next_in = UnsafeMutablePointer(mutating: base)
            stream.avail_in = inputLength
            while true {
                if produced == out.count {
                    guard out.count < ceiling else { return .failure(DeflateError(.tooLarge, zlib: Z_BUF_ERROR)) }
                    let grown = out.count > ceiling / 2 ? ceiling : out.count * 2
                    out.append(contentsOf: repeatElement(0, count: grown - out.count))
                }
                let room = min(out.count - produced, Int(UInt32.max))
                let rc = out.withUnsafeMutableBufferPointer { dst in
                    stream.next_out = dst.baseAddress.map { $0 + produced }
                    stream.avail_out = UInt32(room)
                    let rc = inflate(&stream, Z_NO_FLUSH)
                    stream.next_out = nil
                    return rc
                }
                produced += room - Int(stream.avail_out)
                switch rc {
                case Z_STREAM_END:
                    if produced > limit { return .failure(DeflateError(.tooLarge, zlib: rc)) }
                    if stream.avail_in != 0 { return .failure(DeflateError(.corrupt, zlib: Z_DATA_ERROR)) }
                    if dictionary != nil && !dictionaryUsed {
                        return .failure(DeflateError(.corrupt, zlib: Z_DATA_ERROR))
                    }
                    return .success(())
                case Z_NEED_DICT:
                    // Once only, and only the dictionary the caller named: inflateSetDictionary checks its Adler-32
                    // against the stream's (Z_DATA_ERROR when they differ).
                    guard let dictionary, !dictionaryUsed else { return .failure(DeflateError(rc)) }
                    dictionaryUsed = true
                    let setRC = dictionary.withUnsafeBufferPointer { d in
                        inflateSetDictionary(&stream, d.baseAddress, UInt32(d.count))
                    }
                    guard setRC == Z_OK else { return .failure(DeflateError(.corrupt, zlib: setRC)) }
                    continue
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_out == 0:
                    continue  // the output is full: grow it
                case Z_BUF_ERROR:
                    return .failure(DeflateError(.truncated, zlib: rc))  // no input left inside the stream
                default:
                    return .failure(DeflateError(rc))
                }
            }
        }
        try result.get()
        out.removeSubrange(produced...)
        return out
    }

    /// Whether `bytes` starts like a stream ``compress(_:level:)`` writes (its first byte): what a reader of stored
    /// values that may be compressed looks at.
    public static func looksCompressed(_ bytes: some Collection<UInt8>) -> Bool { bytes.first == headerByte }
}

/// A zlib failure: ``code`` is stable (tests and callers match on it); ``zlibCode`` is zlib's own return code. The
/// description names the failure only, never any of the bytes.
public struct DeflateError: Error, Hashable, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable, Hashable {
        /// Not a zlib stream, a checksum that does not match, bytes after the stream's end, a preset dictionary.
        case corrupt = "deflate.corrupt"
        /// The input ends inside the stream.
        case truncated = "deflate.truncated"
        /// The output would exceed the limit (or the input exceeds zlib's sizes).
        case tooLarge = "deflate.too_large"
        case outOfMemory = "deflate.out_of_memory"
        /// A level outside 0...9 or a negative limit.
        case invalidArgument = "deflate.invalid_argument"
        /// A return code zlib documents for none of the above (a version mismatch, an inconsistent stream state).
        case zlib = "deflate.zlib"
    }

    public var code: Code
    public var zlibCode: Int32

    init(_ code: Code, zlib: Int32) { (self.code, self.zlibCode) = (code, zlib) }

    /// The stable code of a zlib return code.
    init(_ rc: Int32) {
        switch rc {
        case Z_DATA_ERROR, Z_NEED_DICT: self.init(.corrupt, zlib: rc)
        case Z_MEM_ERROR: self.init(.outOfMemory, zlib: rc)
        case Z_BUF_ERROR: self.init(.truncated, zlib: rc)
        default: self.init(.zlib, zlib: rc)
        }
    }

    public var description: String { "\(code.rawValue) (zlib \(zlibCode))" }
}

/// Where zlib's streams get their memory: a deflate stream allocates about 270 KB (its window, hash chains, hash
/// table and pending buffer, 64 KiB each) and an inflate stream about 40 KB, and the store makes one for every value
/// it writes or reads. From malloc, blocks that large went back to the system when freed (glibc trims the heap and
/// its threads' arenas) and came back as page faults on the next value: in some `bench ingest` runs a fifth of the
/// writer thread's time. Freed blocks are kept instead, a few of each size, for the next stream.
///
/// zlib never needs its blocks zeroed (its own default allocator is `malloc`, which does not zero them either), and
/// what a block held before never reaches a stream: the output is the same as from fresh memory (the tests compare
/// streams written one after another with fixed vectors and with each other).
enum ZlibMemory {
    /// A stream that allocates here.
    static func stream() -> z_stream {
        var stream = z_stream()
        stream.zalloc = { _, items, size in ZlibMemory.allocate(Int(items) * Int(size)) }
        stream.zfree = { _, address in address.map(ZlibMemory.release) }
        return stream
    }

    /// Blocks kept per size: a writer's stream and a few readers' at once.
    static let keptPerSize = 8
    /// Each block starts with its size, then the bytes zlib gets (16-byte aligned, as malloc's).
    private static let header = 16
    /// By size, the addresses of the blocks kept.
    private static let free = Mutex<[Int: [UInt]]>([:])

    static func allocate(_ bytes: Int) -> UnsafeMutableRawPointer? {
        if let kept = free.withLock({ $0[bytes]?.popLast() }), let base = UnsafeMutableRawPointer(bitPattern: kept) {
            return base + header
        }
        guard let base = malloc(bytes + header) else { return nil }
        base.storeBytes(of: bytes, as: Int.self)
        return base + header
    }

    static func release(_ address: UnsafeMutableRawPointer) {
        let base = address - header
        let bytes = base.load(as: Int.self)
        let address = UInt(bitPattern: base)
        let kept = free.withLock { blocks -> Bool in
            guard blocks[bytes, default: []].count < keptPerSize else { return false }
            blocks[bytes, default: []].append(address)
            return true
        }
        if !kept { Glibc.free(base) }
    }
}
