internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import Store

/// `iap-gateway bench flood [--count N]`: what a client without any secret can make the gateway keep. The real
/// service (its own process, the default limits), warmed up with a thousand genuine notifications (so that its
/// write-ahead log has reached its working size, as on any gateway in use), receives N bodies of just under 1 MiB —
/// V1 notifications for a bundle nobody configured, their claimed `bid` being all of it — from 8 connections at once.
/// Reports the answers, how much the store (database and write-ahead log, as they are on disk when the flood ends) and
/// the log grew, and the bounds: what the store keeps (the database file) must grow by no more than the untrusted
/// lane's byte cap, and the write-ahead log must stay within its bound (its working size plus one batch: beyond its
/// working size it is borrowed until the next checkpoint resets it, so whether the flood ends just before or just
/// after a reset is timing, not growth).
public enum FloodBenchmark {
    public struct Result: Encodable, Sendable {
        public var bodies: Int
        public var bodyBytes: Int
        public var statuses: [String: Int]
        public var seconds: Double
        public var storeGrowthBytes: Int64
        /// The database file's share.
        public var databaseGrowthBytes: Int64
        /// The write-ahead log's size when the flood ends: working space, truncated to 4 MiB when it is reset.
        public var walBytesAtEnd: Int64
        public var untrustedLaneCapBytes: Int64
        /// The most the write-ahead log may hold (``SQLiteStore/walBoundBytes``).
        public var walBoundBytes: Int64
        public var logGrowthBytes: Int
        /// The database grew by no more than the lane's cap, and the write-ahead log is within its bound.
        public var withinCap: Bool
        public var build: String

        enum CodingKeys: String, CodingKey {
            case bodies, statuses, seconds, build
            case bodyBytes = "body_bytes"
            case storeGrowthBytes = "store_growth_bytes"
            case databaseGrowthBytes = "database_growth_bytes"
            case walBytesAtEnd = "wal_bytes_at_end"
            case untrustedLaneCapBytes = "untrusted_lane_cap_bytes"
            case walBoundBytes = "wal_bound_bytes"
            case logGrowthBytes = "log_growth_bytes"
            case withinCap = "within_cap"
        }
    }

    public static func run(count: Int = 200) async throws -> Result {
        let rig = try BenchRig(label: "flood")
        try rig.startGateway(downstreams: "[]", appDownstreams: [])
        guard let gateway = rig.gateway else { throw IngestBenchmark.Failure(description: "the gateway did not start") }
        let body =
            Array(#"{"notification_type":"DID_RENEW","password":"guess","bid":""#.utf8)
            + [UInt8](repeating: UInt8(ascii: "b"), count: 1_048_000) + Array(#""}"#.utf8)
        let transport = CurlTransport(maxConcurrentTransfers: 8)
        let url = rig.notificationsURL
        for i in 0..<1_000 {
            let r = try await transport.send(
                HTTPRequest(method: .post, url: url, body: try rig.v2Body(i), timeoutMillis: 30_000)
            )
            guard r.status == 200 else {
                throw IngestBenchmark.Failure(description: "warm-up notification answered \(r.status)")
            }
        }
        let storeBefore = rig.storeBytes
        let databaseBefore = rig.databaseBytes
        let logBefore = gateway.stdoutBytes
        let clock = ContinuousClock()
        let start = clock.now
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var seen: [Int] = []
                    for _ in stride(from: worker, to: count, by: 8) {
                        let r = try? await transport.send(
                            HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 30_000)
                        )
                        seen.append(r?.status ?? 0)
                    }
                    return seen
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        let elapsed = clock.now - start
        // The log is written by the gateway's own threads; give its last lines a moment to arrive.
        var log = gateway.stdoutBytes
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(20))
            let now = gateway.stdoutBytes
            if now == log { break }
            log = now
        }
        let growth = rig.storeBytes - storeBefore
        let databaseGrowth = rig.databaseBytes - databaseBefore
        var info = stat()
        let wal = stat(rig.directory + "/gateway.db-wal", &info) == 0 ? Int64(info.st_size) : 0
        let (status, _) = rig.finish()
        guard status == 0 else {
            throw IngestBenchmark.Failure(description: "the gateway exited with status \(status)")
        }
        let cap = GatewayConfig().limits.untrustedQuarantineBytes
        return Result(
            bodies: count,
            bodyBytes: body.count,
            statuses: Dictionary(statuses.map { (String($0), 1) }, uniquingKeysWith: +),
            seconds: ((Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * 100)
                .rounded() / 100,
            storeGrowthBytes: growth,
            databaseGrowthBytes: databaseGrowth,
            walBytesAtEnd: wal,
            untrustedLaneCapBytes: cap,
            walBoundBytes: SQLiteStore.walBoundBytes,
            logGrowthBytes: log - logBefore,
            withinCap: databaseGrowth <= cap && wal <= SQLiteStore.walBoundBytes,
            build: VerifyBenchmark.buildKind
        )
    }
}

#if canImport(Glibc)
import Glibc
#endif
