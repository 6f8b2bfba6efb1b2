/// Zstandard frames written by hand (RFC 8878), for the tests of what a damaged store makes a read do: a frame of a
/// few kilobytes that expands to any size, with its content's size in its header or without it (as a streaming
/// compressor writes a frame). The content is raw blocks (bytes as they are) and RLE blocks (one byte repeated), so
/// no compressor is needed and any size costs nothing to make.
public enum ZstdFrames {
    /// A piece of a frame's content.
    public enum Part: Sendable {
        case bytes([UInt8])
        /// `byte`, `count` times.
        case repeated(UInt8, count: Int)

        var count: Int {
            switch self {
            case .bytes(let b): b.count
            case .repeated(_, let n): n
            }
        }
    }

    /// The largest block: 128 KiB, the window this writes.
    static let blockBytes = 131_072

    /// One frame holding `parts` one after another; with `declaresSize` its header says the content's size (an 8-byte
    /// field), without it the size is unknown until the frame is decoded. No checksum, no dictionary.
    public static func frame(_ parts: [Part], declaresSize: Bool = true) -> [UInt8] {
        // Frame header descriptor: the size field's width (3: 8 bytes; 0: none), no single segment, so a window
        // descriptor follows: exponent 7, 2^(10+7) = 128 KiB.
        var out: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, declaresSize ? 0xC0 : 0x00, 7 << 3]
        if declaresSize {
            let size = UInt64(parts.reduce(0) { $0 + $1.count })
            out += (0..<8).map { UInt8(truncatingIfNeeded: size >> (8 * UInt64($0))) }
        }
        var blocks: [(type: UInt32, size: Int, content: [UInt8])] = []
        for part in parts {
            switch part {
            case .bytes(let b):
                var start = 0
                while start < b.count {
                    let end = min(b.count, start + blockBytes)
                    blocks.append((0, end - start, Array(b[start..<end])))
                    start = end
                }
            case .repeated(let byte, let count):
                var left = count
                while left > 0 {
                    let n = min(left, blockBytes)
                    blocks.append((1, n, [byte]))
                    left -= n
                }
            }
        }
        if blocks.isEmpty { blocks.append((0, 0, [])) }
        for (i, block) in blocks.enumerated() {
            // Block header, 3 bytes little-endian: last block (bit 0), type (bits 1–2), size (bits 3–23).
            let header = (i == blocks.count - 1 ? 1 : 0) | block.type << 1 | UInt32(block.size) << 3
            out += [UInt8(header & 0xFF), UInt8(header >> 8 & 0xFF), UInt8(header >> 16 & 0xFF)]
            out += block.content
        }
        return out
    }

    /// `json` with the string value of its first member `key` (`"key":"…"`) replaced by `bytes` copies of `filler`:
    /// a frame of a few kilobytes for JSON of any size, that parses as `json` would.
    public static func inflating(_ json: [UInt8], member key: String, to bytes: Int, filler: UInt8 = 0x41) -> [UInt8] {
        let opening = Array("\"\(key)\":\"".utf8)
        guard let start = json.firstRange(of: opening)?.upperBound,
            let end = json[start...].firstIndex(of: UInt8(ascii: "\""))
        else { return frame([.bytes(json)]) }
        return frame([.bytes(Array(json[..<start])), .repeated(filler, count: bytes), .bytes(Array(json[end...]))])
    }
}
