internal import Crypto

/// What a client sends as `receipt-data`, made into bytes (docs/architecture.md, "The receipt reader"). Old clients
/// and HTTP stacks change the base64 on the way; Apple's verifyReceipt took all of these, so the reader does too:
///
/// - white space around the text, line breaks (CR, LF, CR LF) and tabs anywhere — 64- or 76-column wrapped base64,
///   with spaces at the start or end of a line;
/// - a space inside a line read as `+` (a form-encoded body decoded by a server that turned `+` into a space);
/// - the URL-safe alphabet (`-` for `+`, `_` for `/`), alone or mixed with the standard one;
/// - missing `=` padding.
///
/// A StoreKit 2 signed transaction (compact JWS, `eyJ…` with two dots) is recognised before any decoding. Anything
/// else outside the alphabet is `malformed`. Decoded bytes past `maxBytes` are `tooLarge`, found while scanning
/// (nothing past the limit is copied).
enum ReceiptInput {
    enum Decoded {
        case bytes([UInt8])
        case storeKit2JWS
    }

    static func decode(_ text: some Collection<UInt8>, maxBytes: Int) throws(ReceiptError) -> Decoded {
        // The scan runs over contiguous bytes, not through the generic collection (about ten times faster).
        let contiguous = text.withContiguousStorageIfAvailable { buffer in
            Result { () throws(ReceiptError) in try decode(buffer: buffer, maxBytes: maxBytes) }
        }
        if let contiguous { return try contiguous.get() }
        return try Array(text).withUnsafeBufferPointer { buffer throws(ReceiptError) in
            try decode(buffer: buffer, maxBytes: maxBytes)
        }
    }

    private static func decode(buffer text: UnsafeBufferPointer<UInt8>, maxBytes: Int) throws(ReceiptError) -> Decoded {
        // The base64 text of `maxBytes` bytes, plus the few characters a lost padding can leave.
        let maxCharacters = (max(maxBytes, 0) / 3 + 1) * 4
        var out: [UInt8] = []
        out.reserveCapacity(min(text.count, maxCharacters + 4))
        var padding = 0
        var dots = 0
        // Spaces and tabs seen since the last kept character, held back until we know whether a line ends here.
        var pendingSpaces = 0
        var lineHasContent = false
        for c in text {
            switch c {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2B, 0x2F, 0x2D, 0x5F:
                guard padding == 0 else { throw ReceiptError(.malformed, "base64 continues after its padding") }
                if pendingSpaces > 0 {
                    // Spaces inside a line: each a `+` that a form decoder turned into a space.
                    out.append(contentsOf: repeatElement(0x2B, count: pendingSpaces))
                    pendingSpaces = 0
                }
                out.append(c == 0x2D ? 0x2B : c == 0x5F ? 0x2F : c)
                lineHasContent = true
            case 0x3D:
                pendingSpaces = 0
                padding += 1
                guard padding <= 2 else { throw ReceiptError(.malformed, "more than two padding characters") }
            case 0x0A, 0x0D:
                pendingSpaces = 0  // spaces before a line break are indentation, not data
                lineHasContent = false
            case 0x20:
                if lineHasContent { pendingSpaces += 1 }  // spaces at a line's start are indentation
            case 0x09:
                break  // a tab is layout wherever it is (no decoder makes one of a `+`)
            case 0x2E:
                dots += 1
                out.append(c)
            default:
                throw ReceiptError(.malformed, "a character outside base64 (byte 0x\(hex(c)))")
            }
            guard out.count <= maxCharacters else {
                throw ReceiptError(.tooLarge, "more than \(maxBytes) bytes once decoded")
            }
        }
        if out.isEmpty { throw ReceiptError(.empty, "no receipt data") }
        if dots > 0 {
            if dots == 2, out.starts(with: [0x65, 0x79, 0x4A]) {  // "eyJ": base64url of `{"`
                return .storeKit2JWS
            }
            throw ReceiptError(.malformed, "a character outside base64 (.)")
        }
        guard out.count % 4 != 1 else { throw ReceiptError(.malformed, "base64 of an impossible length") }
        while out.count % 4 != 0 { out.append(0x3D) }
        let bytes: [UInt8]
        do { bytes = try Base64.decode(out, alphabet: .standard) } catch {
            throw ReceiptError(.malformed, "not base64: \(error.reason)")
        }
        guard bytes.count <= maxBytes else { throw ReceiptError(.tooLarge, "more than \(maxBytes) bytes once decoded") }
        guard !bytes.isEmpty else { throw ReceiptError(.empty, "no receipt data") }
        return .bytes(bytes)
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0x0F)]], as: UTF8.self)
    }
}
