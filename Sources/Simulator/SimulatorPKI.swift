public import Crypto
internal import FoundationEssentials
public import V2Adapter

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// The simulator's keys and certificates, kept in one folder so that every `simulate` command (and the gateway's
/// `trust.extra_roots`) uses the same ones: an Apple-shaped test PKI (`root.der` is what the gateway trusts, for
/// sandbox only), an App Store Server API key (`api-key.p8`, PEM, with `api-key.pub.der` for the fake API) and an App
/// Store Connect API team key (`asc-key.p8`, PEM, with `asc-key.pub.der`: what the fake App Store Connect checks), and a
/// receipt chain (`receipt-root.der`, for `trust.extra_receipt_roots`) that signs the app receipts it issues.
/// Generated once; later commands load it. Nothing here is ever Apple's: the real Apple root is embedded in the
/// gateway and never written anywhere.
public struct SimulatorPKI: Sendable {
    public let folder: String
    public let root: X509Certificate
    public let intermediate: X509Certificate
    public let leaf: X509Certificate
    public let leafKey: PrivateKey
    public let apiKey: PrivateKey
    /// The App Store Connect API team key (`asc-key.p8`): a different key from ``apiKey``, as with Apple.
    public let ascKey: PrivateKey
    public let signer: AppleJWSSigner
    /// The receipt chain (RSA, Apple's marker OIDs): `receipt-root.der` is what the gateway trusts for sandbox
    /// receipts (`trust.extra_receipt_roots`); the leaf signs every receipt the simulator issues.
    public let receiptRoot: X509Certificate
    public let receiptIntermediate: X509Certificate
    public let receiptLeaf: X509Certificate
    public let receiptLeafKey: PrivateKey
    /// The key id the fake App Store Server API expects in bearer tokens (`kid`).
    public static let apiKeyID = "SIMKEY0001"
    /// The issuer id the fake expects (`iss`): the team's, the same for both keys, as with Apple.
    public static let issuerID = "00000000-0000-4000-8000-000000000000"
    /// The key id the fake App Store Connect API expects in bearer tokens (`kid`).
    public static let ascKeyID = "SIMASCKEY1"

    /// Loads the PKI in `folder`, generating it first when the folder has none.
    public static func loadOrCreate(folder: String, now: Int64) throws -> SimulatorPKI {
        let fm = FileManager.default
        if !fm.fileExists(atPath: folder) {
            try fm.createDirectory(
                atPath: folder,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        }
        // root.der is written last: a folder that has it is complete (an interrupted run is simply redone).
        if !fm.fileExists(atPath: folder + "/root.der") {
            // Valid from yesterday for ten years: long enough for any demo, short enough to notice.
            let seconds = now / 1000
            let pki = try GeneratedTestPKI.generate(notBefore: seconds - 86_400, notAfter: seconds + 10 * 365 * 86_400)
            let apiKey = try PrivateKey.generateP256()
            try write(folder + "/leaf.key.pem", Array(pki.leafKey.pemPKCS8.utf8), secret: true)
            try write(folder + "/api-key.p8", Array(apiKey.pemPKCS8.utf8), secret: true)
            try write(folder + "/api-key.pub.der", apiKey.publicKey.subjectPublicKeyInfo)
            try write(folder + "/intermediate.der", pki.intermediate.der)
            try write(folder + "/leaf.der", pki.leaf.der)
            try write(folder + "/root.pem", Array(pki.root.pem.utf8))
            try write(folder + "/root.der", pki.root.der)
        }
        // A folder made before the receipt chain existed gets one now; the rest stays. Its root is written last.
        if !fm.fileExists(atPath: folder + "/receipt-root.der") {
            let seconds = now / 1000
            let receipts = try GeneratedReceiptPKI.generate(
                notBefore: seconds - 86_400,
                notAfter: seconds + 10 * 365 * 86_400
            )
            try write(folder + "/receipt-leaf.key.pem", Array(receipts.leafKey.pemPKCS8.utf8), secret: true)
            try write(folder + "/receipt-leaf.der", receipts.leaf.der)
            try write(folder + "/receipt-intermediate.der", receipts.intermediate.der)
            try write(folder + "/receipt-root.der", receipts.root.der)
        }
        // A folder made before the App Store Connect key existed gets one now; the rest stays.
        if !fm.fileExists(atPath: folder + "/asc-key.p8") {
            let ascKey = try PrivateKey.generateP256()
            try write(folder + "/asc-key.pub.der", ascKey.publicKey.subjectPublicKeyInfo)
            try write(folder + "/asc-key.p8", Array(ascKey.pemPKCS8.utf8), secret: true)
        }
        return try load(folder: folder)
    }

    public static func load(folder: String) throws -> SimulatorPKI {
        func read(_ name: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: folder + "/" + name) else {
                throw SimulatorError(
                    "pki_missing",
                    "\(folder)/\(name) is missing: run `iap-gateway simulate pki --out \(folder)`"
                )
            }
            return Array(data)
        }
        let root = try X509Certificate(der: try read("root.der"))
        let intermediate = try X509Certificate(der: try read("intermediate.der"))
        let leaf = try X509Certificate(der: try read("leaf.der"))
        let leafKey = try PrivateKey(pem: String(decoding: try read("leaf.key.pem"), as: UTF8.self))
        let apiKey = try PrivateKey(pem: String(decoding: try read("api-key.p8"), as: UTF8.self))
        let ascKey = try PrivateKey(pem: String(decoding: try read("asc-key.p8"), as: UTF8.self))
        let signer = try AppleJWSSigner(leaf: leaf, intermediate: intermediate, root: root, leafKey: leafKey)
        return SimulatorPKI(
            folder: folder,
            root: root,
            intermediate: intermediate,
            leaf: leaf,
            leafKey: leafKey,
            apiKey: apiKey,
            ascKey: ascKey,
            signer: signer,
            receiptRoot: try X509Certificate(der: try read("receipt-root.der")),
            receiptIntermediate: try X509Certificate(der: try read("receipt-intermediate.der")),
            receiptLeaf: try X509Certificate(der: try read("receipt-leaf.der")),
            receiptLeafKey: try PrivateKey(rsaPEM: String(decoding: try read("receipt-leaf.key.pem"), as: UTF8.self))
        )
    }

    /// The PEM of the App Store Server API key (what `app_store_api.private_key_env` must hold).
    public var apiKeyPEM: String { apiKey.pemPKCS8 }

    /// The PEM of the App Store Connect API key (what `app_store_connect.private_key_env` must hold).
    public var ascKeyPEM: String { ascKey.pemPKCS8 }

    /// Writes a whole file; keys are created 0600 from the start (never readable by others, not even briefly).
    private static func write(_ path: String, _ bytes: [UInt8], secret: Bool = false) throws {
        unlink(path)
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, secret ? 0o600 : 0o644)
        guard fd >= 0 else { throw SimulatorError("pki_unwritable", "cannot create \(path)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw SimulatorError("pki_unwritable", "cannot write \(path)") }
            written += n
        }
    }
}
