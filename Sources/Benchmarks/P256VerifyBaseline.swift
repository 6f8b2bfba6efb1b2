internal import Crypto

/// libcrypto's own P-256 signature check, timed: one verify over a precomputed digest with its context reused — the
/// loop `openssl speed ecdsap256` times. A benchmark measures it in the same run as what it compares with it.
struct P256VerifyBaseline {
    private let context: ReusableVerifyContext
    private let digest: [UInt8]
    private let signature: [UInt8]

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// A given key and DER signature over `digest`; throws when the signature does not verify.
    init(key: PublicKey, digest: [UInt8], derSignature: [UInt8]) throws {
        context = try ReusableVerifyContext(key: key)
        (self.digest, self.signature) = (digest, derSignature)
        guard context.verify(digest: digest, derSignature: derSignature) else {
            throw Failure(description: "the baseline's signature does not verify")
        }
    }

    /// A fresh key and its signature over a fixed message.
    init() throws {
        let key = try PrivateKey.generateP256()
        let message = Array("iap-gateway P-256 baseline".utf8)
        try self.init(key: key.publicKey, digest: SHA256.hash(message), derSignature: try key.signDER(message))
    }

    /// One verify, true when it passed.
    func verifyOnce() -> Bool { context.verify(digest: digest, derSignature: signature) }

    /// Verifies for about `seconds` on this thread; the wall time of one verify, in ms.
    func measure(seconds: Double) -> Double {
        var meter = VerifyBenchmark.Meter()
        meter.run(seconds: seconds) {
            if !verifyOnce() { fatalError("the baseline's signature stopped verifying") }
        }
        return meter.rate > 0 ? 1000 / meter.rate : 0
    }
}
