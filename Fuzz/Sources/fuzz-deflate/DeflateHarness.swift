import FuzzSupport
import Zlib

/// `Zlib.Deflate.decompress`: what reads every compressed value of an SQLite store (bodies, event JSON) — a damaged
/// or hostile file must give an error, never a trap, a hang or an allocation beyond the limit.
///
/// Input: a mode byte, then the bytes. Mode bits 0–1 pick the limit (0, 64 bytes, 4 KiB, 64 KiB); bit 2 feeds the
/// bytes to `compress` first, so the stream is valid and only the round trip is checked. Invariants: a stream that
/// decompresses gives at most `limit` bytes, and compressing them again gives a stream that decompresses to the same
/// bytes; a valid stream of the input round-trips whenever the input fits the limit, and is `tooLarge` otherwise.
@main enum DeflateFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private let limits = [0, 64, 4_096, 65_536]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let bytes = input.rest()
    let limit = limits[Int(mode & 3)]

    if mode & 4 != 0 {
        guard let stream = try? Deflate.compress(bytes) else { FuzzSupport.fail("compress failed") }
        if stream.first != Deflate.headerByte { FuzzSupport.fail("a stream that does not start with 0x78") }
        FuzzSupport.judgeRoundTrip(
            of: bytes,
            limit: limit,
            Result(catching: { () throws(DeflateError) -> [UInt8] in try Deflate.decompress(stream, limit: limit) }),
            isTooLarge: { $0.code == .tooLarge }
        )
        return 0
    }

    let out: [UInt8]
    switch Result(catching: { () throws(DeflateError) -> [UInt8] in try Deflate.decompress(bytes, limit: limit) }) {
    case .success(let bytes): out = bytes
    case .failure(let error):
        if FuzzSupport.debugging { print("error: \(error)") }
        return 0
    }
    FuzzSupport.judgeDecompressed(out, limit: limit) { out in
        (try? Deflate.compress(out)).flatMap { try? Deflate.decompress($0, limit: limit) }
    }
    return 0
}
