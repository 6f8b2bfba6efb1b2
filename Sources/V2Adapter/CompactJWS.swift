internal import Crypto
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// A compact JWS split into its three segments, with the payload decoded and parsed but nothing verified yet.
struct CompactJWS {
    /// Longest protected header accepted (a real Apple header is about 6 KB; a 1 MiB one is an attack).
    static let maxHeaderBytes = 32 * 1024
    /// Longest token accepted (the endpoint's body limit).
    static let maxTokenBytes = 1024 * 1024

    let token: [UInt8]
    let headerEnd: Int  // index of the first '.'
    let payloadEnd: Int  // index of the second '.'
    let payload: JSONObject
    let signature: [UInt8]

    var headerSegment: ArraySlice<UInt8> { token[0..<headerEnd] }
    /// `header.payload`: the bytes the signature covers.
    var signingInput: ArraySlice<UInt8> { token[0..<payloadEnd] }

    init(_ token: [UInt8]) throws(V2AdapterError) {
        guard token.count <= Self.maxTokenBytes else { throw V2AdapterError(.malformed, "token larger than 1 MiB") }
        let dots = token.withUnsafeBytes { buf -> (Int, Int, Bool)? in
            // memchr: a generic element loop over an 18 KB token costs more than the rest of the parse.
            guard let base = buf.baseAddress, let a = memchr(base, 0x2E, buf.count) else { return nil }
            let first = UnsafeRawPointer(a) - base
            guard let b = memchr(a + 1, 0x2E, buf.count - first - 1) else { return nil }
            let second = UnsafeRawPointer(b) - base
            return (first, second, memchr(b + 1, 0x2E, buf.count - second - 1) != nil)
        }
        guard let (first, second, extra) = dots, !extra else {
            throw V2AdapterError(.malformed, "not a compact JWS (expected 3 segments)")
        }
        (headerEnd, payloadEnd) = (first, second)
        guard headerEnd > 0, payloadEnd > headerEnd + 1 else { throw V2AdapterError(.malformed, "empty JWS segment") }
        guard headerEnd <= Self.maxHeaderBytes else {
            throw V2AdapterError(.malformed, "protected header longer than \(Self.maxHeaderBytes) bytes")
        }
        self.token = token
        let payloadBytes: [UInt8]
        do {
            payloadBytes = try Base64.decode(token[(headerEnd + 1)..<payloadEnd], alphabet: .url)
        } catch {
            throw V2AdapterError(.malformed, "payload segment is not base64url")
        }
        do {
            guard case .object(let o) = try JSONParser.parse(payloadBytes) else {
                throw V2AdapterError(.malformed, "payload is not a JSON object")
            }
            payload = o
        } catch let e as V2AdapterError {
            throw e
        } catch {
            throw V2AdapterError(.malformed, "payload is not JSON (\(error))")
        }
        do {
            signature = try Base64.decode(token[(payloadEnd + 1)...], alphabet: .url)
        } catch {
            throw V2AdapterError(.malformed, "signature segment is not base64url")
        }
    }

    /// The protected header's members this verifier reads.
    struct Header {
        let alg: String
        let x5c: [String]
    }

    func decodeHeader() throws(V2AdapterError) -> Header {
        let bytes: [UInt8]
        do { bytes = try Base64.decode(headerSegment, alphabet: .url) } catch {
            throw V2AdapterError(.malformed, "header segment is not base64url")
        }
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            throw V2AdapterError(.malformed, "header is not JSON (\(error))")
        }
        guard case .object(let h) = value else { throw V2AdapterError(.malformed, "header is not a JSON object") }
        guard case .string(let alg)? = h["alg"] else { throw V2AdapterError(.malformed, "header has no string alg") }
        // RFC 7515 §4.1.11: extensions we do not implement must not be ignored.
        guard h["crit"] == nil else { throw V2AdapterError(.malformed, "header lists critical extensions") }
        guard let x5cValue = h["x5c"] else {
            // Judge the algorithm first: `alg: none` tokens usually carry no chain either.
            if alg != "ES256" { throw V2AdapterError(.unsupportedAlgorithm, "alg is not ES256") }
            throw V2AdapterError(.malformed, "header has no x5c")
        }
        guard case .array(let items) = x5cValue else { throw V2AdapterError(.malformed, "x5c is not an array") }
        var x5c: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw V2AdapterError(.malformed, "x5c entry is not a string") }
            x5c.append(s)
        }
        return Header(alg: alg, x5c: x5c)
    }
}
