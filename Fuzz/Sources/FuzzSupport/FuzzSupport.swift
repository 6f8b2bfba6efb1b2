internal import CFuzzDriver

#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's entry for one input, as `LLVMFuzzerTestOneInput` has it.
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Hands the process to libFuzzer's driver with the command line. Each target's `@main` calls this: SwiftPM links
/// executables with `--defsym main=<module>_main`, so libFuzzer's own `main` is never used.
public func runLibFuzzer(_ callback: FuzzCallback) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
}

/// Helpers shared by the fuzz targets: fixture files found through this file's path (the fuzz package lives in the
/// repository's `Fuzz/` folder), and a failure that libFuzzer records as a crash.
public enum FuzzSupport {
    /// The repository root: `Fuzz/Sources/FuzzSupport/FuzzSupport.swift` is four levels below it.
    public static let repositoryRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)
        return parts.joined(separator: "/")
    }()

    /// The bytes of `path`, relative to the repository root. Traps when the file cannot be read: a harness whose
    /// fixtures are missing must not fuzz silently without them.
    public static func fixture(_ path: String) -> [UInt8] {
        let full = repositoryRoot + "/" + path
        guard let f = fopen(full, "rb") else { fatalError("fuzz: cannot open \(full)") }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    /// `IAPGW_FUZZ_DEBUG=1`: harnesses print what they made of each input (for checking that seeds reach deep).
    public static let debugging = getenv("IAPGW_FUZZ_DEBUG").map { String(cString: $0) == "1" } ?? false

    public static func fixtureText(_ path: String) -> String { String(decoding: fixture(path), as: UTF8.self) }

    /// A broken invariant: prints what and aborts, so libFuzzer saves the input as a crash.
    public static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        var text = "fuzz invariant broken: \(message) (\(file):\(line))\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        abort()
    }

    // MARK: Codecs (deflate, zstd)

    /// Judges the decompression of what a codec's compressor made of `original`: the same bytes when they fit
    /// `limit`; over it, only the refusal `isTooLarge` recognises.
    public static func judgeRoundTrip<E: Error>(
        of original: [UInt8],
        limit: Int,
        _ result: Result<[UInt8], E>,
        isTooLarge: (E) -> Bool,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        switch result {
        case .success(let out):
            if out != original { fail("the round trip changed the bytes", file: file, line: line) }
            if original.count > limit { fail("more bytes than the limit came out", file: file, line: line) }
        case .failure(let error):
            if !isTooLarge(error) || original.count <= limit {
                fail("a valid compressed value within the limit failed: \(error)", file: file, line: line)
            }
        }
    }

    /// Judges what a codec decompressed from arbitrary bytes: no more than `limit`, and compressed and
    /// decompressed again (`roundTrip`, nil on failure) the same bytes.
    public static func judgeDecompressed(
        _ out: [UInt8],
        limit: Int,
        roundTrip: ([UInt8]) -> [UInt8]?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        if out.count > limit { fail("more bytes than the limit came out", file: file, line: line) }
        if roundTrip(out) != out { fail("the output does not round-trip", file: file, line: line) }
    }
}

/// The input, consumed from the front: a mode byte or two, then the rest.
public struct FuzzInput {
    public private(set) var bytes: ArraySlice<UInt8>

    public init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = ArraySlice(UnsafeBufferPointer(start: data, count: size))
    }

    public var isEmpty: Bool { bytes.isEmpty }

    /// The next byte, or 0 when the input is used up.
    public mutating func byte() -> UInt8 {
        guard let b = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return b
    }

    /// Everything left.
    public mutating func rest() -> [UInt8] {
        defer { bytes = [] }
        return Array(bytes)
    }
}
