import Foundation
import TestSupport
import Testing

@testable import Benchmarks

/// `bench fsync`: the disk probe on its own, in a folder of the test's.
@Suite struct FsyncBenchmarkTests {
    @Test func itTimesDurableWritesInTheFolderAndLeavesNothingThere() async throws {
        try await Scratch.withDirectory { folder in
            let r = try await FsyncBenchmark.run(seconds: 0.3, folder: folder)
            #expect(r.folder == folder)
            #expect(r.samples >= 2)
            #expect(r.p50Ms <= r.p99Ms && r.p99Ms <= r.maxMs)
            #expect(r.over100Ms <= r.over25Ms && r.over25Ms <= r.over10Ms && r.over10Ms <= r.samples)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        }
    }

    @Test func aFolderItCannotWriteInIsAClearError() async throws {
        try await Scratch.withDirectory { folder in
            await #expect(throws: FsyncBenchmark.Failure.self) {
                _ = try await FsyncBenchmark.run(seconds: 0.1, folder: folder + "/missing")
            }
            do {
                _ = try await FsyncBenchmark.run(seconds: 0.1, folder: folder + "/missing")
            } catch {
                #expect("\(error)" == "cannot write a probe file in \(folder)/missing")
            }
        }
    }
}

/// The one percentile rule every bench reports with: nearest rank over sorted values, rounded.
@Suite struct BenchQuantileTests {
    @Test func nearestRankOverSortedValuesRounded() {
        let values: [Double] = [1, 2, 3, 4]
        #expect(values.quantile(0, decimals: 2) == 1)
        #expect(values.quantile(0.5, decimals: 2) == 3)  // rank 1.5 rounds up, as `sorted[count / 2]` did
        #expect(values.quantile(0.99, decimals: 2) == 4)
        #expect(values.quantile(1, decimals: 2) == 4)
        #expect([1.26].quantile(0.5, decimals: 1) == 1.3)
        #expect([1.266].quantile(0.5, decimals: 2) == 1.27)
        #expect([Double]().quantile(0.99, decimals: 2) == 0)
    }
}
