import Foundation
import TestSupport
import Testing
import WireJSON

/// `bench scale` end to end at a tiny size: the built `iap-gateway` builds the store, runs every step as the lead
/// would at a million notifications, and prints one JSON line whose every figure is there and makes sense.
@Suite(.serialized) struct ScaleBenchmarkTests {
    /// The `iap-gateway` built beside this test binary (`swift build --build-tests` builds both).
    static let binary: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let beside = URL(filePath: exe).deletingLastPathComponent().appending(path: "iap-gateway").path()
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appending(path: ".build/debug/iap-gateway").path()
    }()

    /// Runs the built executable; its exit status, standard output and standard error.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(filePath: binary)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read before waiting: a child never blocks on a full pipe.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }

    @Test func aTinyStoreIsBuiltMeasuredAndDeleted() async throws {
        try await Scratch.withDirectory { folder in
            let out = folder + "/scale"
            let r = try Self.run([
                "bench", "scale", "--out", out, "--notifications", "200", "--pairs", "100", "--subscriptions", "100",
                "--ingest-seconds", "1",
            ])
            #expect(r.status == 0, "\(r.stderr)")
            let line = try #require(r.stdout.split(separator: "\n").last)
            let o = try #require(try JSONParser.parse(Array(line.utf8)).objectValue)
            #expect(o["store"]?.stringValue == "sqlite")
            #expect(o["notifications"]?.int64Value == 200)
            let config = try #require(o["config"]?.stringValue)
            #expect(config == (o["out"]?.stringValue ?? "") + "/gateway.json")
            #expect(o["kept"]?.boolValue == false)
            #expect(o["env"]?.objectValue?["BENCH_SECRET"] != nil)
            #expect(o["env"]?.objectValue?["BENCH_ADMIN_TOKEN"] != nil)
            #expect(Self.number(o["build_seconds"]) > 0)
            #expect(Self.number(o["store_bytes"]) > 0)
            #expect(Self.number(o["bytes_per_notification"]) > 0)
            let rows = try #require(o["rows"]?.objectValue)
            #expect(rows["journal"]?.int64Value == 200)
            #expect(rows["v1"]?.int64Value == 40)
            #expect(rows["v2"]?.int64Value == 160)
            // One event per notification, plus the V1 path's event of each V2 one that stands alone (the sandbox has
            // no V1 traffic), its receipt job settled: the service starts on no backlog.
            let views = try #require(rows["v1_views"]?.int64Value)
            #expect(views > 0 && views < 160)
            #expect(rows["events"]?.int64Value == 200 + views)
            #expect(rows["ledger"]?.int64Value == 100)
            #expect((rows["delivered"]?.int64Value ?? 0) > 0)

            let steps = try #require(o["steps"]?.objectValue)
            for name in ["report_table", "report_json", "report_html", "subscription", "reconcile", "replay_since_1d"] {
                let step = try #require(steps[name]?.objectValue, "\(name)")
                #expect(step["exit_status"]?.int64Value == 0, "\(name)")
                #expect(Self.number(step["seconds"]) > 0, "\(name)")
                #expect(Self.number(step["peak_rss_mb"]) > 0, "\(name)")
                #expect((step["output_bytes"]?.int64Value ?? 0) > 0, "\(name)")
            }
            for name in ["admin_status", "admin_report", "admin_report_html"] {
                let step = try #require(steps[name]?.objectValue, "\(name)")
                #expect(step["http_status"]?.int64Value == 200, "\(name)")
                #expect((step["output_bytes"]?.int64Value ?? 0) > 0, "\(name)")
            }
            for name in ["reconcile_candidates", "retention_purge"] {
                let step = try #require(steps[name]?.objectValue, "\(name)")
                #expect(step["in_process"]?.boolValue == true, "\(name)")
                #expect(Self.number(step["peak_rss_mb"]) > 0, "\(name)")
            }
            // The oldest day's bodies are past the retention the purge is run with.
            #expect((steps["retention_purge"]?.objectValue?["rows"]?.int64Value ?? 0) > 0)
            let migrate = try #require(steps["migrate_store"]?.objectValue)
            if TestPostgresServer.url == nil {
                #expect(migrate["skipped"]?.stringValue != nil)
            } else {
                #expect(migrate["exit_status"]?.int64Value == 0)
            }

            let serve = try #require(o["serve"]?.objectValue)
            #expect(serve["exit_status"]?.int64Value == 0)
            #expect(Self.number(serve["rss_mb_after_reports"]) > 0)
            #expect(Self.number(serve["peak_rss_mb"]) >= Self.number(serve["rss_mb_after_reports"]))
            for name in ["ingest_big_store", "ingest_empty_store"] {
                let ingest = try #require(o[name]?.objectValue, "\(name)")
                #expect((ingest["samples"]?.int64Value ?? 0) > 0, "\(name)")
                #expect(ingest["failures"]?.int64Value == 0, "\(name)")
                #expect(Self.number(ingest["p50_ms"]) <= Self.number(ingest["p99_ms"]), "\(name)")
            }

            // The config stays, the store does not.
            #expect(FileManager.default.fileExists(atPath: config))
            #expect(!FileManager.default.fileExists(atPath: out + "/gateway.db"))
        }
    }

    @Test func missingOrBadFlagsAreUsageErrors() throws {
        let missing = try Self.run(["bench", "scale", "--notifications", "10", "--pairs", "1", "--subscriptions", "1"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("bench scale needs --out DIR"))
        let bad = try Self.run([
            "bench", "scale", "--out", "/tmp/x", "--notifications", "0", "--pairs", "1", "--subscriptions", "1",
        ])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--notifications must be"))
        let unknown = try Self.run(["bench", "scale", "--out", "/tmp/x", "--seconds", "3"])
        #expect(unknown.status == 2)
    }

    static func number(_ v: JSONValue?) -> Double {
        guard case .number(let text)? = v else { return -1 }
        return Double(text) ?? -1
    }
}
