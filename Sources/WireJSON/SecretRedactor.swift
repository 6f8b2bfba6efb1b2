/// Keeps configured secrets out of bytes the gateway stores or logs (docs/threat-model.md, "Secret disclosure").
///
/// It works on bytes, not on a parsed document, so it applies to bodies that are not JSON at all: a duplicate key,
/// bytes after the document, invalid UTF-8, nesting too deep. A secret is found wherever it stands — as its own
/// bytes, or written with JSON escapes (`\u0061`, `\/`, a surrogate pair), inside a string or not — and the bytes
/// that spell it are replaced by ``marker(_:)``, which names the secret's variable and never holds any of it. The
/// replacement has no character JSON would escape, so a string stays a valid string.
///
/// Secrets shorter than ``minimumLength`` bytes are not looked for: a short value could match ordinary text and
/// mangle genuine bodies (the documentation asks for secrets of 32 random characters).
public struct SecretRedactor: Sendable {
    /// One secret to look for: its name (the environment variable it came from, safe to show) and its bytes.
    public struct Secret: Sendable {
        public let name: String
        let value: [UInt8]
        public init(name: String, value: [UInt8]) { (self.name, self.value) = (name, value) }
    }

    /// The shortest secret looked for.
    public static let minimumLength = 16

    let secrets: [Secret]
    /// Each secret's marker bytes, in the order of ``secrets``.
    private let markers: [[UInt8]]
    /// One bit per pair of bytes, set when some secret starts with that pair: the scan passes every other position
    /// with one look-up instead of a comparison per secret. A pair, not a byte: one byte of a secret's alphabet
    /// stands at every few positions of a body of base64url text (tens of kilobytes in every V2 notification),
    /// a given pair of them at one in thousands.
    private let startsASecret: [UInt64]

    /// Secrets shorter than ``minimumLength`` are left out; the same value named twice is looked for once.
    public init(_ secrets: [Secret]) {
        var seen = Set<[UInt8]>()
        self.secrets = secrets.filter { $0.value.count >= Self.minimumLength && seen.insert($0.value).inserted }
        markers = self.secrets.map { Array(Self.marker($0.name).utf8) }
        var starts = [UInt64](repeating: 0, count: 65_536 / 64)
        for secret in self.secrets {
            let pair = Int(secret.value[0]) << 8 | Int(secret.value[1])
            starts[pair >> 6] |= 1 << UInt64(pair & 63)
        }
        startsASecret = starts
    }

    /// Whether there is anything to look for.
    public var isEmpty: Bool { secrets.isEmpty }

    /// What stands where a secret stood: `iapgw-secret:` and the secret's name.
    public static func marker(_ name: String) -> String { "iapgw-secret:\(name)" }

    /// Whether any secret occurs in `bytes`.
    public func occurs(in bytes: [UInt8]) -> Bool { redacted(bytes) != nil }

    /// The same secrets and `more` (for values of one moment, such as the signatures of the request an answer came
    /// to).
    public func adding(_ more: [Secret]) -> SecretRedactor { more.isEmpty ? self : SecretRedactor(secrets + more) }

    /// `bytes` with every occurrence of a secret replaced by its marker, or nil when none occurs (the common case
    /// costs one pass over the bytes, and no copy when they hold no backslash).
    public func redacted(_ bytes: [UInt8]) -> [UInt8]? {
        let matches = matches(in: bytes)
        guard !matches.isEmpty else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var copied = 0
        for match in matches {
            out += bytes[copied..<match.range.lowerBound]
            out += markers[match.secret]
            copied = match.range.upperBound
        }
        out += bytes[copied...]
        return out
    }

    /// The first `maxLength` bytes of `bytes` with every secret replaced, for a head of outside bytes that is kept
    /// (a downstream's answer in the delivery log): a secret whose spelling starts within them is replaced whole,
    /// also where it runs past `maxLength`, so that a cut in the middle of a secret keeps none of it; the result is
    /// cut at `maxLength` again (a marker may be cut: it holds nothing of the secret). Only `maxLength` bytes and the
    /// longest spelling of the longest secret after them are read (a byte is spelled in at most six: `\u0061`).
    public func redactedPrefix(_ bytes: [UInt8], maxLength: Int) -> [UInt8] {
        let limit = max(0, maxLength)
        guard !secrets.isEmpty else { return Array(bytes.prefix(limit)) }
        let longest = secrets.map(\.value.count).max() ?? 0
        let window = Array(bytes.prefix(limit + 6 * longest))
        var out: [UInt8] = []
        var copied = 0
        for match in matches(in: window) where match.range.lowerBound < limit {
            out += window[copied..<match.range.lowerBound]
            out += markers[match.secret]
            copied = match.range.upperBound
        }
        if copied < min(limit, window.count) { out += window[copied..<min(limit, window.count)] }
        return Array(out.prefix(limit))
    }

    /// Where each secret is spelled in `bytes`, in order, overlapping spellings merged: in the bytes with their escapes
    /// decoded, and — when they hold an escape — as the bytes stand too, widened to the whole escapes they touch. An
    /// escape may swallow a secret's first characters (`\u00` before `0123…`: `\u0001` then `23…`), leaving its bytes
    /// in the body though the decoded text does not spell it; the widened replacement keeps a string a string.
    private func matches(in bytes: [UInt8]) -> [(range: Range<Int>, secret: Int)] {
        guard !secrets.isEmpty, !bytes.isEmpty else { return [] }
        let text = DecodedText(bytes)
        let decoded = matches(in: text)
        guard !text.isIdentity else { return decoded }
        let raw = matches(in: DecodedText(bytes, decodingEscapes: false)).map { (text.widened($0.range), $0.secret) }
        guard !raw.isEmpty else { return decoded }
        var merged: [(range: Range<Int>, secret: Int)] = []
        for match in (decoded + raw).sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            if let last = merged.last, last.range.upperBound > match.range.lowerBound {
                merged[merged.count - 1].range =
                    last.range.lowerBound..<max(last.range.upperBound, match.range.upperBound)
            } else {
                merged.append(match)
            }
        }
        return merged
    }

    /// Where each secret is spelled in `text`, as source ranges, in order, overlapping spellings merged.
    private func matches(in text: DecodedText) -> [(range: Range<Int>, secret: Int)] {
        var matches: [(range: Range<Int>, secret: Int)] = []
        var position = 0
        while let candidate = text.firstIndex(from: position, startingOneOf: startsASecret) {
            position = candidate
            guard let (secret, length) = secretStarting(at: position, in: text) else {
                position += 1
                continue
            }
            let source = text.sourceStart(position)..<text.sourceEnd(position + length - 1)
            if let last = matches.last, last.range.upperBound > source.lowerBound {
                // Overlapping spellings (one secret inside another's escape): one replacement covers both.
                matches[matches.count - 1].range = last.range.lowerBound..<max(last.range.upperBound, source.upperBound)
            } else {
                matches.append((source, secret))
            }
            position += length
        }
        return matches
    }

    /// `bytes` with every secret replaced (unchanged when none occurs).
    public func redact(_ bytes: [UInt8]) -> [UInt8] { redacted(bytes) ?? bytes }

    /// `text` with every secret replaced: for strings read from a body (claims, error reasons) before they are logged
    /// or stored. Invalid UTF-8 cannot arise: a marker replaces whole escapes or whole runs of bytes, and a secret is
    /// valid UTF-8 itself.
    public func redact(_ text: String) -> String {
        guard !secrets.isEmpty, let out = redacted(Array(text.utf8)) else { return text }
        return String(decoding: out, as: UTF8.self)
    }

    /// The longest secret whose bytes start at `position` of the decoded text, with its length.
    private func secretStarting(at position: Int, in text: DecodedText) -> (Int, Int)? {
        var best: (Int, Int)?
        let first = text[position]
        for (i, secret) in secrets.enumerated() where secret.value[0] == first && secret.value.count > (best?.1 ?? 0) {
            guard position + secret.value.count <= text.count else { continue }
            var equal = true
            for k in 1..<secret.value.count where text[position + k] != secret.value[k] {
                equal = false
                break
            }
            if equal { best = (i, secret.value.count) }
        }
        return best
    }

    // MARK: Password members

    /// What stands where an unconfigured `password` stood in a quarantined body.
    public static let passwordPlaceholder = "iapgw-redacted"

    /// `bytes` with the value of every `"password"` member replaced by ``passwordPlaceholder``, found leniently so
    /// that it works on bodies that are not valid JSON: a quoted `password` name, optional white space, `:`, optional
    /// white space, then a string up to its closing quote or the end of the bytes. A value that is already a
    /// ``marker(_:)`` is kept (it names the secret that stood there). For quarantined bodies: a V1 body whose bundle is
    /// not configured carries a secret nobody told the gateway about.
    public static func redactingPasswordValues(_ bytes: [UInt8]) -> [UInt8] {
        let name = Array(#""password""#.utf8)
        let keep = Array("iapgw-secret:".utf8)
        let placeholder = Array(passwordPlaceholder.utf8)
        var out: [UInt8] = []
        var copied = 0
        var i = 0
        while i + name.count <= bytes.count {
            guard bytes[i] == name[0], bytes[i..<(i + name.count)].elementsEqual(name) else {
                i += 1
                continue
            }
            var j = i + name.count
            func skipSpace() { while j < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[j]) { j += 1 } }
            skipSpace()
            guard j < bytes.count, bytes[j] == UInt8(ascii: ":") else {
                i += 1
                continue
            }
            j += 1
            skipSpace()
            guard j < bytes.count, bytes[j] == UInt8(ascii: "\"") else {
                i = j
                continue
            }
            let start = j + 1
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
            }
            end = min(end, bytes.count)
            if !bytes[start..<end].starts(with: keep) {
                out += bytes[copied..<start]
                out += placeholder
                copied = end
            }
            i = end
        }
        guard copied > 0 else { return bytes }
        out += bytes[copied...]
        return out
    }
}

extension SecretRedactor {
    // MARK: Webhook signatures

    /// The name whose ``marker(_:)`` stands where a webhook signature stood.
    public static let webhookSignatureName = "webhook-signature"

    /// The fewest base64 characters after `v1,` taken for a signature: an HMAC-SHA256 is 44 (43 and one `=`).
    static let signatureLength = 43

    /// `bytes` with every Standard Webhooks signature replaced by the marker of ``webhookSignatureName``: `v1,` then a
    /// run of base64 (`\/` counted as `/`) of at least ``signatureLength`` characters, or a run of any length that
    /// the bytes end in (a head cut in the middle of one). For the heads of answers: a signature of the request
    /// itself is replaced by its value (``adding(_:)``) before; this finds those of other requests, and those kept
    /// before the values were known.
    public static func redactingWebhookSignatures(_ bytes: [UInt8]) -> [UInt8] {
        let prefix = Array("v1,".utf8)
        let replacement = Array(Self.marker(webhookSignatureName).utf8)
        func isBase64(_ b: UInt8) -> Bool {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                return true
            default: return false
            }
        }
        var out: [UInt8] = []
        var copied = 0
        var i = 0
        while i + prefix.count < bytes.count {
            guard bytes[i] == prefix[0], bytes[i..<(i + prefix.count)].elementsEqual(prefix) else {
                i += 1
                continue
            }
            let start = i + prefix.count
            var end = start
            var characters = 0
            while end < bytes.count {
                if isBase64(bytes[end]) {
                    end += 1
                } else if bytes[end] == UInt8(ascii: "\\"), end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: "/") {
                    end += 2
                } else {
                    break
                }
                characters += 1
            }
            if characters >= signatureLength || (characters > 0 && end == bytes.count) {
                out += bytes[copied..<start]
                out += replacement
                copied = end
            }
            i = max(end, i + 1)
        }
        guard copied > 0 else { return bytes }
        out += bytes[copied...]
        return out
    }
}

/// The bytes with JSON escapes decoded wherever they stand, and for each decoded byte where its spelling starts and
/// ends in the source. Bytes that hold no backslash are their own decoding: no copy is made.
private struct DecodedText {
    private let source: [UInt8]
    /// Empty when the source holds no backslash.
    private var decoded: [UInt8] = []
    /// Per decoded byte: the source offset where the escape (or byte) that produced it starts and ends.
    private var starts: [Int32] = []
    private var ends: [Int32] = []
    private let identity: Bool

    /// `decodingEscapes: false`: the bytes as they stand, escapes and all.
    init(_ bytes: [UInt8], decodingEscapes: Bool = true) {
        source = bytes
        identity = !decodingEscapes || !Self.holdsBackslash(bytes)
        guard !identity else { return }
        decoded.reserveCapacity(bytes.count)
        starts.reserveCapacity(bytes.count)
        ends.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let start = i
            var produced: [UInt8]
            if bytes[i] == UInt8(ascii: "\\"), let (value, length) = Self.escape(bytes, at: i) {
                produced = value
                i += length
            } else {
                produced = [bytes[i]]
                i += 1
            }
            for b in produced {
                decoded.append(b)
                starts.append(Int32(start))
                ends.append(Int32(i))
            }
        }
    }

    var count: Int { identity ? source.count : decoded.count }
    /// Whether the decoded bytes are the source's (it holds no escape).
    var isIdentity: Bool { identity }

    /// `range` of the source widened to the whole spellings (escapes) whose bytes it touches.
    func widened(_ range: Range<Int>) -> Range<Int> {
        guard !identity, !range.isEmpty else { return range }
        // The first decoded byte whose spelling ends after the range's start, the last whose spelling starts before
        // its end: both arrays grow with the index.
        let first = Self.partition(ends) { Int($0) > range.lowerBound }
        let last = Self.partition(starts) { Int($0) >= range.upperBound } - 1
        guard first < starts.count, last >= 0 else { return range }
        return min(range.lowerBound, Int(starts[first]))..<max(range.upperBound, Int(ends[last]))
    }

    /// The first index of `values` (ordered so that `isAfter` is false, then true) where `isAfter` holds.
    private static func partition(_ values: [Int32], _ isAfter: (Int32) -> Bool) -> Int {
        var (low, high) = (0, values.count)
        while low < high {
            let mid = (low + high) / 2
            if isAfter(values[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
    /// Whether `bytes` holds a backslash, looked for eight bytes at a time: a V2 body is tens of kilobytes of
    /// base64url, which never holds one.
    static func holdsBackslash(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            let backslashes = ones &* UInt64(UInt8(ascii: "\\"))
            var i = 0
            while i + 8 <= raw.count {
                // A byte of `v` is zero where the word holds a backslash; the expression is nonzero exactly when
                // some byte of `v` is zero.
                let v = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ backslashes
                if (v &- ones) & ~v & highs != 0 { return true }
                i += 8
            }
            while i < raw.count {
                if raw[i] == UInt8(ascii: "\\") { return true }
                i += 1
            }
            return false
        }
    }

    /// The first decoded position from `start` on where a pair of bytes that `pairs` marks (one bit per pair, the
    /// first byte high) starts, or nil. Four look-ups are combined before one branch: most positions of a body
    /// start no secret. A secret is at least two bytes long, so the last byte alone never starts one.
    func firstIndex(from start: Int, startingOneOf pairs: [UInt64]) -> Int? {
        (identity ? source : decoded).withUnsafeBufferPointer { bytes in
            pairs.withUnsafeBufferPointer { bits in
                @inline(__always) func marked(_ i: Int) -> UInt64 {
                    let pair = Int(bytes[i]) << 8 | Int(bytes[i + 1])
                    return bits[pair >> 6] >> UInt64(pair & 63) & 1
                }
                var i = start
                while i + 5 <= bytes.count {
                    if marked(i) | marked(i + 1) | marked(i + 2) | marked(i + 3) != 0 { break }
                    i += 4
                }
                while i + 2 <= bytes.count {
                    if marked(i) != 0 { return i }
                    i += 1
                }
                return nil
            }
        }
    }
    subscript(i: Int) -> UInt8 { identity ? source[i] : decoded[i] }
    /// Where the spelling of decoded byte `i` starts in the source.
    func sourceStart(_ i: Int) -> Int { identity ? i : Int(starts[i]) }
    /// Where the spelling of decoded byte `i` ends in the source (one past it).
    func sourceEnd(_ i: Int) -> Int { identity ? i + 1 : Int(ends[i]) }

    /// The bytes one escape at `i` stands for and its length in the source; nil when it is not a valid escape (its
    /// backslash then stands for itself).
    static func escape(_ b: [UInt8], at i: Int) -> ([UInt8], Int)? {
        guard i + 1 < b.count else { return nil }
        switch b[i + 1] {
        case UInt8(ascii: "\""): return ([0x22], 2)
        case UInt8(ascii: "\\"): return ([0x5C], 2)
        case UInt8(ascii: "/"): return ([0x2F], 2)
        case UInt8(ascii: "b"): return ([0x08], 2)
        case UInt8(ascii: "f"): return ([0x0C], 2)
        case UInt8(ascii: "n"): return ([0x0A], 2)
        case UInt8(ascii: "r"): return ([0x0D], 2)
        case UInt8(ascii: "t"): return ([0x09], 2)
        case UInt8(ascii: "u"):
            guard var scalar = hex4(b, at: i + 2) else { return nil }
            var length = 6
            if (0xD800...0xDBFF).contains(scalar), b.count >= i + 12, b[i + 6] == UInt8(ascii: "\\"),
                b[i + 7] == UInt8(ascii: "u"), let low = hex4(b, at: i + 8), (0xDC00...0xDFFF).contains(low)
            {
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                length = 12
            }
            // A lone surrogate stands for no character; its escape is kept as written.
            guard let u = Unicode.Scalar(scalar) else { return nil }
            return (Array(String(Character(u)).utf8), length)
        default:
            return nil
        }
    }

    static func hex4(_ b: [UInt8], at i: Int) -> UInt32? {
        guard i + 4 <= b.count else { return nil }
        var v: UInt32 = 0
        for c in b[i..<(i + 4)] {
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: return nil
            }
            v = v << 4 | d
        }
        return v
    }
}
