internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import Receipts
internal import ServiceKit
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway receipt decode`: one receipt read offline, its signature judged, printed as one JSON object
/// (docs/commands.md, "receipt"; docs/architecture.md, "The receipt reader"). No network, no config, no store.
enum ReceiptCommand: Command {
    static let name = "receipt"
    static let usage = """
          iap-gateway receipt decode [--root DER]... [--intermediate DER]... FILE|-
              Read one receipt — verifyReceipt's receipt-data (base64 in any spelling clients send) or the file
              StoreKit writes (DER) — from FILE or standard input (-): an app receipt, an Xcode receipt or an iOS 6
              transaction receipt. Prints one JSON object: format, signature (valid, signer, digest, judged_at,
              root, failure), receipt (verifyReceipt's receipt object, request_date now) and transaction_id (the id a
              Server API lookup uses, or null); or {"error": {"code", "message"}} when it is no receipt. The chain is
              judged at the receipt's creation date (a transaction receipt's purchase date) against Apple Inc. Root;
              --root adds a root (DER or PEM) that vouches for sandbox receipts only, --intermediate the intermediate
              of transaction receipts signed under it (their signature carries the leaf alone). Exit 0 when the
              receipt is authenticated, 1 otherwise.
        """

    /// Files larger than this are not read: base64 of ``ReceiptReader/defaultMaxBytes`` with generous white space.
    static let maxFileBytes = 2 * ReceiptReader.defaultMaxBytes

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["root", "intermediate"])
        let positionals = try a.positionals(atMost: 2, for: "receipt")
        guard let verb = positionals.first else { throw CommandError.usage("receipt needs a subcommand: decode") }
        guard verb == "decode" else { throw CommandError.usage("receipt: unknown subcommand \(verb) (decode)") }
        guard positionals.count == 2 else { throw CommandError.usage("receipt decode needs a FILE (or - for stdin)") }
        let trust = ReceiptTrust(
            extraSandboxRoots: try certificates(a.all("root"), flag: "root"),
            extraIntermediates: try certificates(a.all("intermediate"), flag: "intermediate")
        )
        let (status, output) =
            switch read(positionals[1]) {
            case .success(let bytes): decode(bytes, trust: trust, now: WallClock.wallMillis())
            case .failure(let error): (Int32(1), errorJSON(code: error.code, message: error.message))
            }
        print(String(decoding: output, as: UTF8.self))
        return status
    }

    /// The DER of each certificate file (DER or PEM) of `--flag`.
    static func certificates(_ paths: [String], flag: String) throws -> [[UInt8]] {
        try paths.map { path in
            guard let bytes = try? Array(Data(contentsOf: URL(filePath: path))) else {
                throw CommandError.usage("--\(flag): cannot read \(path)")
            }
            if let cert = try? X509Certificate(der: bytes) { return cert.der }
            if let cert = try? X509Certificate(pem: String(decoding: bytes, as: UTF8.self)) { return cert.der }
            throw CommandError.usage("--\(flag): \(path) is not a DER or PEM certificate")
        }
    }

    struct ReadFailure: Error {
        var code: String
        var message: String
    }

    /// The bytes of `path`, or of standard input for `-`, up to ``maxFileBytes``.
    static func read(_ path: String) -> Result<[UInt8], ReadFailure> {
        if path == "-" {
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
                if n < 0 {
                    return .failure(ReadFailure(code: "unreadable_file", message: "cannot read standard input"))
                }
                if n == 0 { return .success(out) }
                out += chunk[0..<n]
                if out.count > maxFileBytes {
                    return .failure(ReadFailure(code: "too_large", message: "more than \(maxFileBytes) bytes"))
                }
            }
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > maxFileBytes {
            return .failure(ReadFailure(code: "too_large", message: "larger than \(maxFileBytes) bytes"))
        }
        guard let bytes = try? Array(Data(contentsOf: URL(filePath: path))) else {
            return .failure(ReadFailure(code: "unreadable_file", message: "cannot read \(path)"))
        }
        return .success(bytes)
    }

    /// What `receipt decode` prints for `bytes` (its pretty JSON) and its exit status: 0 for an authenticated
    /// receipt. A file that is the receipt's own bytes — DER (`30 8x …`, a device's or Xcode's receipt file) or a
    /// transaction receipt's property list — is read as such; anything else as `receipt-data` text.
    static func decode(_ bytes: [UInt8], trust: ReceiptTrust, now: Int64) -> (Int32, [UInt8]) {
        let binary = bytes.count > 1 && bytes[0] == 0x30 && bytes[1] >= 0x80
        let plist = bytes.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) } == 0x7B
        do {
            let decoded =
                binary || plist
                ? try ReceiptReader.read(decoded: bytes, trust: trust) : try ReceiptReader.read(bytes, trust: trust)
            return (decoded.signature.valid ? 0 : 1, decoded.report(requestDate: now).text(pretty: true))
        } catch {
            return (1, errorJSON(code: error.code.rawValue, message: error.reason))
        }
    }

    static func errorJSON(code: String, message: String) -> [UInt8] {
        JSONValue.object(
            JSONObject([("error", .object(JSONObject([("code", .string(code)), ("message", .string(message))])))])
        ).text(pretty: true)
    }
}
