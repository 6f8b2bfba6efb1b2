internal import CZstd
import Synchronization

/// Zstandard frames (RFC 8878), the one place the gateway calls libzstd. A frame this writes starts with zstd's magic
/// number (the bytes 28 B5 2F FD: '(' first, which no JSON value starts with), says its content's size, and ends
/// with a checksum of the content.
///
/// Decompression is bounded: a frame whose content is larger than the limit is ``ZstdError/Code/tooLarge`` before
/// anything is allocated for it, and input that is corrupt, truncated, followed by other bytes, not one frame, or
/// read with another dictionary than it was written with throws, whatever the bytes are — it never traps.
public enum Zstd {
    /// The first bytes of every frame this writes.
    public static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// zstd's fastest standard level.
    public static let defaultLevel: Int32 = 1

    /// What `ZSTD_getFrameContentSize` answers for a frame that does not say its size, and for bytes that are not
    /// a frame (`ZSTD_CONTENTSIZE_UNKNOWN` and `_ERROR`: C macros Swift does not import).
    private static let contentSizeUnknown = UInt64.max
    private static let contentSizeError = UInt64.max - 1

    /// Whether `bytes` starts like a frame this writes: what a reader of stored values that may be compressed
    /// looks at.
    public static func looksCompressed(_ bytes: some Collection<UInt8>) -> Bool { bytes.starts(with: magic) }

    /// `bytes` as one frame, without a dictionary. Throws ``ZstdError``: `outOfMemory`, `invalidArgument` (a level
    /// outside zstd's), `tooLarge` (beyond zstd's sizes).
    public static func compress(_ bytes: [UInt8], level: Int32 = defaultLevel) throws(ZstdError) -> [UInt8] {
        try Compressor(dictionary: nil, level: level).compress(bytes)
    }

    /// A compressor, with a dictionary or without: one zstd context (reused by every value, so a value allocates
    /// nothing but its output) and, with a dictionary, the dictionary digested once for the level (a `ZSTD_CDict`):
    /// each value then starts from the digested dictionary without reading it again, or copying it.
    ///
    /// The dictionary is raw content: the bytes the values are likely to repeat, no zstd dictionary format. A frame
    /// written with one reads back only with ``Zstd/decompress(_:dictionary:limit:)`` given the same bytes (with
    /// others, or none, the frame is `corrupt`: its references fall outside what it has, or its checksum fails).
    ///
    /// `@unchecked Sendable`: the context is used under the lock only; the digested dictionary is read only.
    public final class Compressor: @unchecked Sendable {
        private let lock = Mutex(())
        private let context: OpaquePointer
        private let digested: OpaquePointer?
        /// The dictionary's size in bytes (0 without one).
        public let dictionaryBytes: Int

        /// Throws ``ZstdError``: `invalidArgument` (a level outside zstd's, an empty dictionary, or one in zstd's
        /// own dictionary format — never UTF-8 text, which cannot hold its magic number), `outOfMemory`.
        public init(dictionary: [UInt8]?, level: Int32 = defaultLevel) throws(ZstdError) {
            guard level >= ZSTD_minCLevel(), level <= ZSTD_maxCLevel() else { throw ZstdError(.invalidArgument) }
            if let dictionary {
                // zstd reads a dictionary that starts with its dictionary magic (37 A4 30 EC) as its own format.
                guard !dictionary.isEmpty, !dictionary.starts(with: [0x37, 0xA4, 0x30, 0xEC]) else {
                    throw ZstdError(.invalidArgument)
                }
            }
            guard let context = ZSTD_createCCtx() else { throw ZstdError(.outOfMemory) }
            var digested: OpaquePointer?
            do throws(ZstdError) {
                try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level))
                try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1))
                try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1))
                if let dictionary {
                    digested = dictionary.withUnsafeBytes { d in ZSTD_createCDict(d.baseAddress, d.count, level) }
                    guard let digested else { throw ZstdError(.outOfMemory) }
                    try Self.check(ZSTD_CCtx_refCDict(context, digested))
                }
            } catch {
                ZSTD_freeCDict(digested)
                ZSTD_freeCCtx(context)
                throw error
            }
            self.context = context
            self.digested = digested
            dictionaryBytes = dictionary?.count ?? 0
        }

        deinit {
            ZSTD_freeCCtx(context)
            ZSTD_freeCDict(digested)
        }

        /// `bytes` as one frame (with this compressor's dictionary, if it has one).
        public func compress(_ bytes: [UInt8]) throws(ZstdError) -> [UInt8] {
            let bound = ZSTD_compressBound(bytes.count)
            guard ZSTD_isError(bound) == 0, bound > 0 else { throw ZstdError(.tooLarge) }
            var written = 0
            let out = [UInt8](unsafeUninitializedCapacity: bound) { dst, initialized in
                written = bytes.withUnsafeBytes { src in
                    lock.withLock { _ in ZSTD_compress2(context, dst.baseAddress, bound, src.baseAddress, src.count) }
                }
                initialized = ZSTD_isError(written) == 0 ? written : 0
            }
            try Self.check(written)
            return out
        }

        private static func check(_ code: Int) throws(ZstdError) {
            guard ZSTD_isError(code) != 0 else { return }
            throw ZstdError(zstd: code)
        }
    }

    /// The content of the one frame `bytes` holds, at most `limit` bytes of it; `dictionary` the one the frame was
    /// written with (nil: none). Throws ``ZstdError``: `corrupt` (not one whole frame, bytes after it, a frame that
    /// does not say its size or whose content is not that size, a bad checksum, another dictionary), `truncated`
    /// (the input ends inside the frame), `tooLarge` (its content is larger than `limit`), `outOfMemory`.
    public static func decompress(
        _ bytes: [UInt8],
        dictionary: [UInt8]? = nil,
        limit: Int
    ) throws(ZstdError)
        -> [UInt8]
    {
        guard limit >= 0 else { throw ZstdError(.invalidArgument) }
        guard bytes.count >= magic.count else { throw ZstdError(bytes.isEmpty ? .truncated : .corrupt) }
        guard bytes.starts(with: magic) else { throw ZstdError(.corrupt) }  // not a frame (or a skippable one)
        let result: Result<[UInt8], ZstdError> = bytes.withUnsafeBytes { src in
            Result { () throws(ZstdError) -> [UInt8] in try decompress(frame: src, dictionary: dictionary, limit: limit)
            }
        }
        return try result.get()
    }

    private static func decompress(
        frame src: UnsafeRawBufferPointer,
        dictionary: [UInt8]?,
        limit: Int
    ) throws(ZstdError) -> [UInt8] {
        let frame = ZSTD_findFrameCompressedSize(src.baseAddress, src.count)
        if ZSTD_isError(frame) != 0 { throw ZstdError(zstd: frame) }
        guard frame == src.count else { throw ZstdError(.corrupt) }  // bytes after the frame
        let declared = ZSTD_getFrameContentSize(src.baseAddress, src.count)
        guard declared != contentSizeError, declared != contentSizeUnknown else { throw ZstdError(.corrupt) }
        guard declared <= UInt64(limit) else { throw ZstdError(.tooLarge) }
        let size = Int(declared)
        guard let context = DecompressionContexts.shared.checkOut() else { throw ZstdError(.outOfMemory) }
        defer { DecompressionContexts.shared.checkIn(context) }
        var produced = 0
        var scratch: UInt8 = 0
        let out = [UInt8](unsafeUninitializedCapacity: size) { dst, initialized in
            produced = withUnsafeMutablePointer(to: &scratch) { fallback in
                let target = dst.baseAddress.map(UnsafeMutableRawPointer.init) ?? UnsafeMutableRawPointer(fallback)
                return (dictionary ?? []).withUnsafeBytes { d in
                    ZSTD_decompress_usingDict(context, target, size, src.baseAddress, src.count, d.baseAddress, d.count)
                }
            }
            initialized = ZSTD_isError(produced) == 0 && produced <= size ? produced : 0
        }
        if ZSTD_isError(produced) != 0 { throw ZstdError(zstd: produced) }
        guard produced == size else { throw ZstdError(.corrupt) }
        return out
    }
}

/// Idle decompression contexts, so that a read does not make and free one: a `ZSTD_DCtx` is about 160 KB, which the
/// C library gets from `mmap` and returns with `munmap` (with its page faults in between) — more than decompressing a
/// stored value costs. A context serves one call at a time; every decompression starts it afresh (whatever the call
/// before it left), and at most ``capacity`` idle ones are kept (beyond that a returned context is freed).
private final class DecompressionContexts: Sendable {
    static let shared = DecompressionContexts()
    static let capacity = 8

    /// A `ZSTD_DCtx*` parked here: owned by the pool while idle, by one caller while checked out.
    private struct Idle: @unchecked Sendable { let context: OpaquePointer }
    private let idle = Mutex<[Idle]>([])

    /// An idle context or a new one; nil when libzstd cannot allocate one.
    func checkOut() -> OpaquePointer? {
        idle.withLock { $0.popLast()?.context } ?? ZSTD_createDCtx()
    }

    func checkIn(_ context: OpaquePointer) {
        let kept = idle.withLock { pool in
            guard pool.count < Self.capacity else { return false }
            pool.append(Idle(context: context))
            return true
        }
        if !kept { ZSTD_freeDCtx(context) }
    }
}

/// A zstd failure: ``code`` is stable (tests and callers match on it); ``zstdCode`` is libzstd's own error code (0
/// when the wrapper judged alone). The description names the failure only, never any of the bytes.
public struct ZstdError: Error, Hashable, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable, Hashable {
        /// Not one whole frame, bytes after it, a bad checksum, a size that does not match, another dictionary.
        case corrupt = "zstd.corrupt"
        /// The input ends inside the frame.
        case truncated = "zstd.truncated"
        /// The content would be larger than the limit (or the input than zstd's sizes).
        case tooLarge = "zstd.too_large"
        /// libzstd could not allocate its context.
        case outOfMemory = "zstd.out_of_memory"
        /// A level outside zstd's, a negative limit, an empty dictionary or one in zstd's own format.
        case invalidArgument = "zstd.invalid_argument"
    }

    public let code: Code
    public let zstdCode: Int

    init(_ code: Code, zstd: Int = 0) {
        self.code = code
        self.zstdCode = zstd
    }

    /// From a result `ZSTD_isError` says is one.
    init(zstd result: Int) {
        let error = ZSTD_getErrorCode(result)
        let code: Code
        switch error {
        case ZSTD_error_srcSize_wrong: code = .truncated
        case ZSTD_error_memory_allocation: code = .outOfMemory
        case ZSTD_error_parameter_outOfBound, ZSTD_error_parameter_unsupported: code = .invalidArgument
        default: code = .corrupt
        }
        self.init(code, zstd: Int(error.rawValue))
    }

    public var description: String { "\(code.rawValue) (zstd error \(zstdCode))" }
}
