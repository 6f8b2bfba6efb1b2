internal import Crypto
internal import FoundationEssentials
internal import Receipts

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// `iap-gateway bench receipts`: app receipts read and their signatures judged (``ReceiptReader/read(_:trust:maxBytes:)``,
/// everything the `/verifyReceipt` endpoint does before it asks Apple's API) on one thread, for a real 11 KB receipt
/// (Apple-signed, nine purchases) and a built ~100 KB one (187 purchases, a test root as the extra sandbox root),
/// beside libcrypto's own RSA-2048 verify rate measured in the same run — in process, interleaved with the receipts in
/// 50 ms slices (the loop `openssl speed rsa2048` times), and by `openssl speed -seconds 2 rsa2048` itself when the
/// command is on the PATH. Each receipt needs three RSA-2048 verifies (its signature, the leaf's, the intermediate's),
/// so `rsa_bound_receipts_per_second` = verifies/s ÷ 3 is what the receipts could reach if nothing else cost.
public enum ReceiptBenchmark {
    public struct Result: Encodable, Sendable {
        public var receiptsPerSecond10KB: Double
        public var receiptsPerSecond100KB: Double
        public var msPerReceipt10KB: Double
        public var msPerReceipt100KB: Double
        /// The target: a 100 KB receipt read and verified in at most this many ms (release build, this machine).
        public var targetMsPerReceipt100KB: Double
        public var meetsTarget: Bool
        public var bytes10KB: Int
        public var bytes100KB: Int
        public var purchases100KB: Int
        /// libcrypto's RSA-2048 verify (PKCS#1 v1.5 over a SHA-256 digest, context reused), in this process.
        public var libcryptoRSA2048VerifiesPerSecond: Double
        /// `openssl speed -seconds 2 rsa2048`'s verify/s, run after the timed loops; nil without the command.
        public var opensslSpeedRSA2048VerifiesPerSecond: Double?
        public var rsaBoundReceiptsPerSecond: Double
        /// `POST /verifyReceipt` of the real service from a fresh store (``ReceiptAnswerBenchmark``).
        public var verifyReceipt: ReceiptAnswerBenchmark.Result?
        public var seconds: Double
        public var build: String
        public var samples: String

        enum CodingKeys: String, CodingKey {
            case receiptsPerSecond10KB = "receipts_per_second_10kb"
            case receiptsPerSecond100KB = "receipts_per_second_100kb"
            case msPerReceipt10KB = "ms_per_receipt_10kb"
            case msPerReceipt100KB = "ms_per_receipt_100kb"
            case targetMsPerReceipt100KB = "target_ms_per_receipt_100kb"
            case meetsTarget = "meets_target"
            case bytes10KB = "bytes_10kb"
            case bytes100KB = "bytes_100kb"
            case purchases100KB = "purchases_100kb"
            case libcryptoRSA2048VerifiesPerSecond = "libcrypto_rsa2048_verifies_per_second"
            case opensslSpeedRSA2048VerifiesPerSecond = "openssl_speed_rsa2048_verifies_per_second"
            case rsaBoundReceiptsPerSecond = "rsa_bound_receipts_per_second"
            case verifyReceipt = "verify_receipt"
            case seconds, build, samples
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// 2025-06-01T00:00:00Z (ms): the creation date of the built receipt.
    static let created: Int64 = 1_748_736_000_000
    static let purchases = 187

    /// The reader's phase, then the endpoint's (``ReceiptAnswerBenchmark``, a `serve` child process).
    public static func run(secondsPerPhase: Double) async throws -> Result {
        var result = try read(secondsPerPhase: secondsPerPhase)
        result.verifyReceipt = try await ReceiptAnswerBenchmark.run(seconds: secondsPerPhase)
        return result
    }

    /// Runs for about `secondsPerPhase` (receipts and baseline interleaved), then `openssl speed` (about 4 s).
    static func read(secondsPerPhase: Double) throws -> Result {
        let small = ReceiptBenchSample.text
        let apple = ReceiptTrust()
        let pki = try GeneratedReceiptPKI.generate(
            notBefore: 1_577_836_800,
            notAfter: 2_208_988_800,
            names: .test("iap-gateway Bench")
        )
        let large = Array(ReceiptBuilder.base64(try ReceiptBuilder.build(largeReceipt(), pki: pki)).utf8)
        let sandbox = ReceiptTrust(extraSandboxRoots: [pki.root.der])

        // Sanity: both authenticate and hold what they should.
        let checkSmall = try ReceiptReader.read(small, trust: apple)
        let checkLarge = try ReceiptReader.read(large, trust: sandbox)
        guard checkSmall.signature.valid, checkSmall.app?.inApp.count == 9, checkLarge.signature.valid,
            checkLarge.app?.inApp.count == purchases
        else { throw Failure(description: "a benchmark receipt does not authenticate") }

        let baseline = try RSA2048VerifyBaseline()
        var baselineMeter = VerifyBenchmark.Meter()
        var smallMeter = VerifyBenchmark.Meter()
        var largeMeter = VerifyBenchmark.Meter()
        // The machine is shared: baseline and receipts run in alternating short slices, so all see its same speed.
        let slices = max(3, Int(secondsPerPhase / 0.15))
        for _ in 0..<slices {
            baselineMeter.run(seconds: 0.05) {
                if !baseline.verifyOnce() { fatalError("baseline verify failed") }
            }
            smallMeter.run(seconds: 0.05) {
                guard (try? ReceiptReader.read(small, trust: apple))?.signature.valid == true else {
                    fatalError("the 10 KB receipt stopped verifying")
                }
            }
            largeMeter.run(seconds: 0.05) {
                guard (try? ReceiptReader.read(large, trust: sandbox))?.signature.valid == true else {
                    fatalError("the 100 KB receipt stopped verifying")
                }
            }
        }
        let speed = OpenSSLSpeed.rsa2048VerifiesPerSecond()
        let verifies = baselineMeter.rate
        let ms100 = largeMeter.rate > 0 ? 1000 / largeMeter.rate : 0
        return Result(
            receiptsPerSecond10KB: round1(smallMeter.rate),
            receiptsPerSecond100KB: round1(largeMeter.rate),
            msPerReceipt10KB: round3(smallMeter.rate > 0 ? 1000 / smallMeter.rate : 0),
            msPerReceipt100KB: round3(ms100),
            targetMsPerReceipt100KB: 5,
            meetsTarget: ms100 > 0 && ms100 <= 5,
            bytes10KB: small.count,
            bytes100KB: large.count,
            purchases100KB: purchases,
            libcryptoRSA2048VerifiesPerSecond: round1(verifies),
            opensslSpeedRSA2048VerifiesPerSecond: speed.map(round1),
            rsaBoundReceiptsPerSecond: round1(verifies / 3),
            verifyReceipt: nil,
            seconds: secondsPerPhase,
            build: VerifyBenchmark.buildKind,
            samples:
                "10 KB: Fixtures/receipts/revenuecat-receiptsample1-sandbox-2020.b64 (real, Apple Inc. Root, 9 purchases); "
                + "100 KB: built with ReceiptBuilder under a generated test root (sandbox, \(purchases) purchases)"
        )
    }

    /// A long-lived subscriber's receipt: monthly renewals of one subscription, a consumable every tenth purchase.
    static func largeReceipt() -> AppReceipt {
        let month: Int64 = 2_592_000_000
        let first = created - Int64(purchases) * month
        return AppReceipt(
            receiptType: "ProductionSandbox",
            bundleID: "com.example.gateway",
            applicationVersion: "412",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            downloadID: 0,
            versionExternalIdentifier: 0,
            creationDate: created,
            originalPurchaseDate: 1_375_340_400_000,
            inApp: (0..<purchases).map { i in
                let bought = first + Int64(i) * month
                let consumable = i % 10 == 9
                return ReceiptPurchase(
                    quantity: 1,
                    productID: consumable ? "com.example.gateway.coins.100" : "com.example.gateway.premium.monthly",
                    transactionID: String(2_000_000_000_000_000 + i),
                    originalTransactionID: consumable ? String(2_000_000_000_000_000 + i) : "2000000000000000",
                    purchaseDate: bought,
                    originalPurchaseDate: consumable ? bought : first,
                    expiresDate: consumable ? nil : bought + month,
                    webOrderLineItemID: consumable ? nil : String(2_000_000_000_100_000 + i),
                    isTrialPeriod: i == 0,
                    isInIntroOfferPeriod: false,
                    productType: consumable ? 1 : 3
                )
            }
        )
    }

    private static func round1(_ x: Double) -> Double { (x * 10).rounded() / 10 }
    private static func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
}

/// The `/verifyReceipt` endpoint's answers per second — a receipt read, its purchases looked up through the App Store
/// Server API (a local fake), verifyReceipt's answer built — to be measured here once the endpoint exists, beside
/// the reader's own rate. Until then it measures nothing and the result leaves the figure out.
/// libcrypto's RSA-2048 verify, timed: PKCS#1 v1.5 over a precomputed SHA-256 digest with its context reused — what
/// `openssl speed rsa2048` times for its verify column. Measured in the same run as the receipts.
struct RSA2048VerifyBaseline {
    private let context: ReusableVerifyContext
    private let digest: [UInt8]
    private let signature: [UInt8]

    init() throws {
        let key = try PrivateKey.generateRSA(bits: 2048)
        let message = Array("iap-gateway RSA-2048 baseline".utf8)
        signature = try key.signDER(message)
        digest = SHA256.hash(message)
        context = try ReusableVerifyContext(key: key.publicKey, digestIsSHA256: true)
        guard context.verify(digest: digest, derSignature: signature) else {
            throw ReceiptBenchmark.Failure(description: "the baseline's RSA signature does not verify")
        }
    }

    func verifyOnce() -> Bool { context.verify(digest: digest, derSignature: signature) }
}

/// `openssl speed -seconds 2 rsa2048`, run as a child process: its verify/s for RSA 2048, or nil when the command is
/// not on the PATH or prints no such line.
enum OpenSSLSpeed {
    static func rsa2048VerifiesPerSecond() -> Double? {
        guard let openssl = executable("openssl") else { return nil }
        guard
            let child = try? ChildProcess(
                executable: openssl,
                arguments: ["speed", "-seconds", "2", "rsa2048"],
                environment: [:],
                discardStandardError: true
            )
        else { return nil }
        _ = child.waitForExit()
        return parse(child.keptLines)
    }

    /// The verify/s column of the `rsa 2048 bits` line: `rsa 2048 bits 0.000274s 0.000018s   3654.5  54354.4`.
    static func parse(_ lines: [String]) -> Double? {
        for line in lines where line.hasPrefix("rsa 2048 bits") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
