import FuzzSupport
import Zstd

/// `Zstd.decompress`: what reads every compressed value of an SQLite store (bodies, event JSON) — a damaged or
/// hostile file must give an error, never a trap, a hang or an allocation beyond the limit.
///
/// Input: a mode byte, then the bytes. Mode bits 0–1 pick the limit (0, 64 bytes, 4 KiB, 64 KiB); bit 2 feeds the
/// bytes to a compressor first, so the frame is valid and only the round trip is checked; bit 3 uses a preset
/// dictionary (the store's values are written with one) on both sides. Invariants: a frame that decompresses gives at
/// most `limit` bytes, and compressing them again gives a frame that decompresses to the same bytes; a valid frame
/// of the input round-trips whenever the input fits the limit, and is `tooLarge` otherwise.
@main enum ZstdFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private let limits = [0, 64, 4_096, 65_536]
private let dictionary = Array(
    String(
        repeating: #"{"bundle_id":"com.example.app","product_id":"monthly","signedPayload":"eyJhbGciOiJFUzI1NiJ9"}"#,
        count: 4
    )
    .utf8
)
private let plain = try? Zstd.Compressor(dictionary: nil)
private let withDictionary = try? Zstd.Compressor(dictionary: dictionary)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let bytes = input.rest()
    let limit = limits[Int(mode & 3)]
    let useDictionary = mode & 8 != 0
    guard let compressor = useDictionary ? withDictionary : plain else { FuzzSupport.fail("no compressor") }
    let decompress = { (frame: [UInt8]) throws(ZstdError) -> [UInt8] in
        try Zstd.decompress(frame, dictionary: useDictionary ? dictionary : nil, limit: limit)
    }

    if mode & 4 != 0 {
        guard let frame = try? compressor.compress(bytes) else { FuzzSupport.fail("compress failed") }
        if !Zstd.looksCompressed(frame) { FuzzSupport.fail("a frame that does not start with zstd's magic") }
        FuzzSupport.judgeRoundTrip(
            of: bytes,
            limit: limit,
            Result(catching: { () throws(ZstdError) -> [UInt8] in try decompress(frame) }),
            isTooLarge: { $0.code == .tooLarge }
        )
        return 0
    }

    let out: [UInt8]
    switch Result(catching: { () throws(ZstdError) -> [UInt8] in try decompress(bytes) }) {
    case .success(let bytes): out = bytes
    case .failure(let error):
        if FuzzSupport.debugging { print("error: \(error)") }
        return 0
    }
    FuzzSupport.judgeDecompressed(out, limit: limit) { out in
        (try? compressor.compress(out)).flatMap { try? decompress($0) }
    }
    return 0
}
