import Crypto
import Foundation
import Testing

@testable import Benchmarks

/// `bench ingest`'s CPU by thread, and the libcrypto baseline it divides the CPU by.
@Suite struct BenchThreadCPUTests {
    @Test func threadsCountUnderTheirNamesAndTheRestIsOther() {
        let before: [(total: Double, threads: [String: Double])] = [
            (10, ["iapgw-handler": 4, "iapgw-writer": 2, "MHD-worker": 1, "curl": 1])
        ]
        // 2 s more in all: 0.8 s handlers, 0.4 s writer, 0.2 s HTTP; the rest on threads of other names, or on threads
        // that ended between the readings (the process's total still has them).
        let after: [(total: Double, threads: [String: Double])] = [
            (12, ["iapgw-handler": 4.8, "iapgw-writer": 2.4, "MHD-worker": 1.2])
        ]
        let cpu = IngestBenchmark.ThreadCPU.between(before, after, notifications: 1_000)
        #expect(cpu == IngestBenchmark.ThreadCPU(handlers: 0.8, writer: 0.4, http: 0.2, other: 0.6))
    }

    @Test func severalGatewaysAddUpAndNoNotificationsGiveZeros() {
        let one: (total: Double, threads: [String: Double]) = (1, ["iapgw-writer": 0.5])
        let two: (total: Double, threads: [String: Double]) = (2, ["iapgw-writer": 1])
        let cpu = IngestBenchmark.ThreadCPU.between([one, one], [two, two], notifications: 2_000)
        #expect(cpu == IngestBenchmark.ThreadCPU(handlers: 0, writer: 0.5, http: 0, other: 0.5))
        #expect(
            IngestBenchmark.ThreadCPU.between([one], [two], notifications: 0)
                == IngestBenchmark.ThreadCPU(handlers: 0, writer: 0, http: 0, other: 0)
        )
    }

    @Test func theBaselineTimesAVerifyThatPassesAndRefusesASignatureThatDoesNot() throws {
        let baseline = try P256VerifyBaseline()
        #expect(baseline.verifyOnce())
        let ms = baseline.measure(seconds: 0.05)
        #expect(ms > 0 && ms < 50, "\(ms) ms per verify")

        let key = try PrivateKey.generateP256()
        let other = try PrivateKey.generateP256()
        let message = Array("m".utf8)
        #expect(throws: P256VerifyBaseline.Failure.self) {
            _ = try P256VerifyBaseline(
                key: key.publicKey,
                digest: SHA256.hash(message),
                derSignature: try other.signDER(message)
            )
        }
    }

    @Test func aChildsThreadsAreReadByName() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], environment: [:])
        defer { _ = child.terminate(signal: SIGKILL) }
        var names: [String: Double] = [:]
        for _ in 0..<500 where names["sleep"] == nil {
            names = child.cpuSecondsByThreadName
            if names["sleep"] == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(names.keys.sorted() == ["sleep"])
    }
}
