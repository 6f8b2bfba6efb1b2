internal import FoundationEssentials

/// `iap-gateway bench fsync [--seconds N] [--folder DIR]`: how long the disk under DIR takes to make a small write
/// durable, with nothing of the gateway running — the wait under every commit of a durable store, SQLite's or
/// PostgreSQL's, and so the floor of the answer's latency. The same probe as `bench ingest`'s (8 KiB written and
/// `fdatasync`ed every 50 ms). A disk whose worst waits are tens or hundreds of milliseconds sets a p99 that high
/// whatever the store does: a notification that arrives during a stalled flush waits for it and then for its own.
public enum FsyncBenchmark {
    public struct Result: Encodable, Sendable {
        public var folder: String
        public var seconds: Double
        public var samples: Int
        public var p50Ms: Double
        public var p99Ms: Double
        public var maxMs: Double
        /// Waits longer than 10, 25 and 100 ms.
        public var over10Ms: Int
        public var over25Ms: Int
        public var over100Ms: Int

        enum CodingKeys: String, CodingKey {
            case folder, seconds, samples
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case maxMs = "max_ms"
            case over10Ms = "over_10_ms"
            case over25Ms = "over_25_ms"
            case over100Ms = "over_100_ms"
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    public static func run(seconds: Double, folder: String) async throws -> Result {
        guard let probe = FsyncProbe(directory: folder) else {
            throw Failure(description: "cannot write a probe file in \(folder)")
        }
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        let sorted = probe.stop()
        return Result(
            folder: folder,
            seconds: seconds,
            samples: sorted.count,
            p50Ms: sorted.quantile(0.5, decimals: 1),
            p99Ms: sorted.quantile(0.99, decimals: 1),
            maxMs: sorted.quantile(1, decimals: 1),
            over10Ms: sorted.count { $0 > 10 },
            over25Ms: sorted.count { $0 > 25 },
            over100Ms: sorted.count { $0 > 100 }
        )
    }
}
