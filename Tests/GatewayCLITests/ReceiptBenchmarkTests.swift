import Crypto
import Receipts
import TestPKI
import Testing

@testable import Benchmarks

/// `bench receipts`: its 100 KB receipt and how it reads `openssl speed`. (The timed run itself is `bench`'s job,
/// in a release build.)
@Suite struct ReceiptBenchmarkTests {
    @Test func readsTheVerifyColumnOfOpenSSLSpeed() {
        let output = [
            "version: 3.0.22", "                  sign    verify    sign/s verify/s",
            "rsa 2048 bits 0.000274s 0.000018s   3654.5  54354.4",
        ]
        #expect(OpenSSLSpeed.parse(output) == 54354.4)
        #expect(OpenSSLSpeed.parse(["rsa 4096 bits 0.001s 0.0001s 1.0 2.0", "nothing"]) == nil)
    }

    @Test func theLargeReceiptIsAboutAHundredKilobytesOf187Purchases() throws {
        let pki = try GeneratedReceiptPKI.generate(notBefore: 1_577_836_800, notAfter: 2_208_988_800)
        let text = ReceiptBuilder.base64(try ReceiptBuilder.build(ReceiptBenchmark.largeReceipt(), pki: pki))
        #expect((95_000...115_000).contains(text.utf8.count), "\(text.utf8.count)")
        let r = try ReceiptReader.read(Array(text.utf8), trust: ReceiptTrust(extraSandboxRoots: [pki.root.der]))
        #expect(r.signature.valid && r.app?.inApp.count == 187)
        #expect(r.lookupTransactionID == "2000000000000000")
    }

    @Test func theEmbeddedSampleIsTheRealReceipt() throws {
        let r = try ReceiptReader.read(ReceiptBenchSample.text, trust: ReceiptTrust())
        #expect(r.signature.valid && r.app?.bundleID == "com.revenuecat.sampleapp" && r.app?.inApp.count == 9)
    }

    @Test func theEndpointPhaseAnswersEveryReceiptFromAFreshStore() async throws {
        // A short run of the built binary: every request answered status 0, none asked Apple (the API is unreachable).
        let r = try await ReceiptAnswerBenchmark.run(
            seconds: 0.3,
            rate: 100,
            customers: 10,
            purchases: 4,
            concurrency: 4,
            executable: MultiInstanceProcessTests.binary
        )
        #expect(r.failures == 0 && r.answersPerSecond > 0 && r.latencySamples > 0, "\(r)")
        #expect(r.peakRSSMB > 0 && r.receiptBytes > 0)
    }
}
