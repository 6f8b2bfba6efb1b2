internal import Canonical
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ServiceKit
internal import Store
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway bench scale`: the gateway on a store the size of a busy installation's. Builds the store in DIR
/// (``ScaleStoreBuilder``: notifications with their events and deliveries, subscription states, a week of compared
/// pairs), writes the config `serve` and `report` take for it (`DIR/gateway.json`), then times what operators and the
/// service do on it — each CLI command as its own process (this executable), the admin API of a running `serve`,
/// the store's reconciliation selection and retention purge in this process — and ingest latency at a fixed offered
/// rate on the big store and on an empty one, in the same run.
public enum ScaleBenchmark {
    public struct Options: Sendable {
        public var postgres = false
        public var out: String
        public var notifications: Int
        public var pairs: Int
        public var subscriptions: Int
        public var keep = false
        /// The open loop's offered rate and length, on each store.
        public var rate = 500
        public var ingestSeconds = 10.0
        public init(out: String, notifications: Int, pairs: Int, subscriptions: Int) {
            (self.out, self.notifications, self.pairs, self.subscriptions) = (out, notifications, pairs, subscriptions)
        }
    }

    /// One timed step: a child process (exit status, its peak RSS from `wait4`, what it printed), an admin request
    /// (HTTP status, answer bytes), or work in this process (peak RSS of this process during it).
    public struct Step: Encodable, Sendable {
        public var seconds: Double
        public var peakRSSMB: Double?
        public var exitStatus: Int32?
        public var httpStatus: Int?
        public var outputBytes: Int?
        /// What the step counted: rows purged, candidates selected, deliveries re-armed.
        public var rows: Int?
        public var inProcess: Bool?
        public var skipped: String?

        enum CodingKeys: String, CodingKey {
            case seconds
            case peakRSSMB = "peak_rss_mb"
            case exitStatus = "exit_status"
            case httpStatus = "http_status"
            case outputBytes = "output_bytes"
            case rows
            case inProcess = "in_process"
            case skipped
        }
    }

    public struct Ingest: Encodable, Sendable {
        public var p50Ms: Double
        public var p99Ms: Double
        public var samples: Int
        public var failures: Int
        public var offeredRatePerSecond: Int
        public var seconds: Double
        enum CodingKeys: String, CodingKey {
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case samples, failures
            case offeredRatePerSecond = "offered_rate_per_second"
            case seconds
        }
    }

    public struct Serve: Encodable, Sendable {
        public var startSeconds: Double
        public var rssMBAfterStart: Double
        public var rssMBAfterReports: Double
        public var peakRSSMB: Double
        public var exitStatus: Int32
        enum CodingKeys: String, CodingKey {
            case startSeconds = "start_seconds"
            case rssMBAfterStart = "rss_mb_after_start"
            case rssMBAfterReports = "rss_mb_after_reports"
            case peakRSSMB = "peak_rss_mb"
            case exitStatus = "exit_status"
        }
    }

    public struct Rows: Encodable, Sendable {
        public var journal: Int
        public var v1: Int
        public var v2: Int
        public var events: Int
        /// Of `events`: the V1 path's events of V2 notifications that stand alone (their receipt jobs settled).
        public var v1Views: Int
        public var ledger: Int
        public var delivered: Int
        public var dead: Int
        public var pending: Int
        enum CodingKeys: String, CodingKey {
            case journal, v1, v2, events, ledger, delivered, dead, pending
            case v1Views = "v1_views"
        }
    }

    public struct Result: Encodable, Sendable {
        public var store: String
        public var build: String
        public var notifications: Int
        public var pairs: Int
        public var subscriptions: Int
        public var out: String
        public var config: String
        /// What `serve --config` needs in its environment, names and values.
        public var env: [String: String]
        public var kept: Bool
        public var buildSeconds: Double
        public var rows: Rows
        public var storeBytes: Int64
        public var bytesPerNotification: Double
        public var steps: [String: Step]
        public var serve: Serve
        public var ingestBigStore: Ingest
        public var ingestEmptyStore: Ingest

        enum CodingKeys: String, CodingKey {
            case store, build, notifications, pairs, subscriptions, out, config, env, kept
            case buildSeconds = "build_seconds"
            case rows
            case storeBytes = "store_bytes"
            case bytesPerNotification = "bytes_per_notification"
            case steps, serve
            case ingestBigStore = "ingest_big_store"
            case ingestEmptyStore = "ingest_empty_store"
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    public static func run(
        _ options: Options,
        executable: String = "/proc/self/exe",
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> Result {
        let out = URL(filePath: options.out).standardized.path()
        let dir = out.hasSuffix("/") && out.count > 1 ? String(out.dropLast()) : out
        try prepareFolder(dir)
        let schema = options.postgres ? try BenchSchema(environment: ProcessEnvironment.variables) : nil
        var keepSchema = false
        defer { if !keepSchema { schema?.drop() } }
        let rig = try BenchRig(label: "scale", executable: executable)
        defer { _ = rig.finish() }
        try FileManager.default.copyItem(atPath: rig.directory + "/root.der", toPath: dir + "/root.der")

        // The downstreams' endpoint: answers every delivery at once.
        var sinkConfig = HTTPServer.Configuration()
        sinkConfig.threads = 4
        let sink = HTTPServer(configuration: sinkConfig) { _ in .json(200, Array(#"{"ok":true}"#.utf8)) }
        try sink.start()
        defer {
            sink.stopAccepting()
            sink.stop()
        }

        let token = "bench-admin-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        var env = ["BENCH_SECRET": BenchRig.secret, "BENCH_ADMIN_TOKEN": token]
        if let schema { env["IAPGW_BENCH_STORE_URL"] = schema.url }
        let configPath = dir + "/gateway.json"
        try Data(
            configText(postgres: options.postgres, verifyReceiptPort: rig.apple.port, sinkPort: sink.port).utf8
        ).write(to: URL(filePath: configPath))
        let config: GatewayConfig
        do { config = try GatewayConfig.load(path: configPath) } catch {
            throw Failure(description: "the generated config is refused: \(error)")
        }
        let childEnvironment = env.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }

        // 1. The store. PostgreSQL's is built as an SQLite store first, then moved by `migrate-store` — the bulk path,
        // its rows those the migration writes — instead of a round trip per row.
        let clock = ContinuousClock()
        let buildStart = clock.now
        let buildConfigPath = options.postgres ? dir + "/build-sqlite.json" : configPath
        if options.postgres {
            try Data(
                configText(postgres: false, verifyReceiptPort: rig.apple.port, sinkPort: sink.port).utf8
            ).write(to: URL(filePath: buildConfigPath))
        }
        let buildConfig: GatewayConfig
        do { buildConfig = try GatewayConfig.load(path: buildConfigPath) } catch {
            throw Failure(description: "the generated config is refused: \(error)")
        }
        let store = try GatewayService.openStore(config: buildConfig, environment: env)
        let builder = ScaleStoreBuilder(
            store: store,
            router: Router(config: buildConfig),
            now: WallClock.wallMillis(),
            notifications: options.notifications,
            pairs: options.pairs,
            subscriptions: options.subscriptions,
            signer: rig.signer,
            leafSerial: rig.leafSerial,
            progress: { progress("build: \($0)") }
        )
        let counts: ScaleStoreBuilder.Counts
        let events: Int
        do {
            counts = try await builder.build()
            events = try await store.read { tx in try tx.counts().events }
            store.close()
        } catch {
            store.close()
            throw error
        }
        var bulkMigration: Step?
        if options.postgres {
            progress("build: moving the store into PostgreSQL (migrate-store)…")
            let start = clock.now
            let child = try ChildProcess(
                executable: executable,
                arguments: [
                    "migrate-store", "--config", buildConfigPath, "--to-postgres-env", "IAPGW_BENCH_STORE_URL",
                ],
                environment: childEnvironment
            )
            let (status, peak) = child.waitForExit()
            bulkMigration = Step(
                seconds: seconds(clock.now - start),
                peakRSSMB: peak,
                exitStatus: status,
                outputBytes: child.stdoutBytes
            )
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: buildConfig.sqlitePath + suffix)
            }
            try? FileManager.default.removeItem(atPath: buildConfigPath)
            guard status == 0 else { throw Failure(description: "migrate-store into PostgreSQL exited with \(status)") }
        }
        let buildSeconds = ScaleStoreBuilder.seconds(clock.now - buildStart)
        let storeBytes = try schema?.totalBytes() ?? sqliteBytes(config.sqlitePath)
        progress("built in \(buildSeconds) s: \(storeBytes) bytes")

        var steps: [String: Step] = [:]
        /// Runs a command as its own process; its step, and the lines it printed (the first 64).
        @discardableResult
        func cli(
            _ name: String,
            _ arguments: [String],
            environment: [String: String] = childEnvironment
        ) throws
            -> [String]
        {
            progress("\(name)…")
            let start = clock.now
            let child = try ChildProcess(executable: executable, arguments: arguments, environment: environment)
            let (status, peak) = child.waitForExit()
            steps[name] = Step(
                seconds: seconds(clock.now - start),
                peakRSSMB: peak,
                exitStatus: status,
                outputBytes: child.stdoutBytes
            )
            if status != 0 { progress("\(name) exited with status \(status)") }
            return child.keptLines
        }

        // 2. The report, as the CLI renders it.
        for format in ["table", "json", "html"] {
            try cli("report_\(format)", ["report", "--config", configPath, "--format", format])
        }

        // 3. The service on the big store: its admin API, its memory, ingest at a fixed rate.
        progress("serve…")
        let serveStart = clock.now
        let gateway = try ChildProcess(
            executable: executable,
            arguments: ["serve", "--config", configPath],
            environment: childEnvironment
        )
        guard gateway.listeningPort(timeout: 600) != nil,
            let adminPort = gateway.listeningField("admin_port").flatMap({ UInt16($0) })
        else {
            gateway.terminate(signal: SIGKILL)
            throw Failure(description: "serve did not start on the big store")
        }
        // Stopped below; killed if a step fails first.
        defer { gateway.terminate(signal: SIGKILL) }
        let port = gateway.listeningPort(timeout: 1) ?? 0
        let startSeconds = seconds(clock.now - serveStart)
        let rssAfterStart = gateway.rssMB
        let transport = CurlTransport(maxConcurrentTransfers: 64)
        for (name, path) in [
            ("admin_status", "/admin/status"), ("admin_report", "/admin/report"),
            ("admin_report_html", "/admin/report?format=html"),
        ] {
            progress("GET \(path)…")
            let start = clock.now
            let answer = try? await transport.send(
                HTTPRequest(
                    method: .get,
                    url: "http://127.0.0.1:\(adminPort)\(path)",
                    headers: [HTTPHeader("Authorization", "Bearer \(token)")],
                    timeoutMillis: 1_800_000,
                    maxResponseBytes: 512 << 20
                )
            )
            steps[name] = Step(
                seconds: seconds(clock.now - start),
                httpStatus: answer?.status ?? 0,
                outputBytes: answer?.body.count ?? 0
            )
        }
        let rssAfterReports = gateway.rssMB
        progress("ingest at \(options.rate)/s on the big store…")
        let ingestBig = try await openLoop(
            url: "http://127.0.0.1:\(port)/notifications",
            rig: rig,
            offset: 0,
            options: options,
            transport: transport
        )
        let servePeak = gateway.peakRSSMB
        let serveStatus = gateway.terminate()

        // 4. One subscription, a day's replay, reconciliation, the retention purge, the copy to PostgreSQL.
        try cli("subscription", ["subscription", "--config", configPath, ScaleStoreBuilder.sampleSubscription])
        steps["reconcile_candidates"] = try await reconcileSelection(config: config, environment: env)
        try cli("reconcile", ["reconcile", "--config", configPath])
        let replayed = try cli("replay_since_1d", ["replay", "--config", configPath, "--since", "1d"])
        if let line = replayed.first, case .object(let o)? = try? JSONParser.parse(Array(line.utf8)),
            let n = o["requeued"]?.int64Value
        {
            steps["replay_since_1d"]?.rows = Int(n)
        }
        steps["retention_purge"] = try await purge(
            config: config,
            environment: env,
            cutoff: builder.start + ScaleStoreBuilder.day,
            now: builder.now
        )
        if let bulkMigration {
            // The store was moved into PostgreSQL by migrate-store: that move, timed.
            steps["migrate_store"] = bulkMigration
        } else if let target = try? BenchSchema(environment: ProcessEnvironment.variables) {
            defer { target.drop() }
            try cli(
                "migrate_store",
                ["migrate-store", "--config", configPath, "--to-postgres-env", "IAPGW_BENCH_MIGRATE_URL"],
                environment: childEnvironment.merging(["IAPGW_BENCH_MIGRATE_URL": target.url]) { a, _ in a }
            )
        } else {
            steps["migrate_store"] = Step(
                seconds: 0,
                skipped: "no PostgreSQL: set IAPGW_BENCH_DATABASE_URL (or run under scripts/with-postgres)"
            )
        }

        // 5. The same ingest on an empty store of the same kind, in the same run.
        progress("ingest at \(options.rate)/s on an empty store…")
        // On PostgreSQL, a fresh schema of the same database.
        let emptySchema = options.postgres ? try BenchSchema(environment: ProcessEnvironment.variables) : nil
        defer { emptySchema?.drop() }
        try rig.startGateways(
            count: 1,
            store: emptySchema.map { .postgres(url: $0.url) } ?? .sqlite,
            downstreams: """
                [ { "name": "main", "url": "http://127.0.0.1:\(sink.port)/events", "environments": ["production", "sandbox"],
                    "shadow": true, "concurrency": 8 } ]
                """,
            appDownstreams: ["main"]
        )
        let ingestEmpty = try await openLoop(
            url: rig.notificationsURL,
            rig: rig,
            offset: 1_000_000,
            options: options,
            transport: transport
        )
        _ = rig.finish()  // before its schema is dropped

        if options.keep {
            keepSchema = true
            schema?.keep()
        } else if !options.postgres {
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: config.sqlitePath + suffix)
            }
        }
        return Result(
            store: options.postgres ? "postgres" : "sqlite",
            build: VerifyBenchmark.buildKind,
            notifications: options.notifications,
            pairs: options.pairs,
            subscriptions: options.subscriptions,
            out: dir,
            config: configPath,
            env: env,
            kept: options.keep,
            buildSeconds: buildSeconds,
            rows: Rows(
                journal: counts.journal,
                v1: counts.v1,
                v2: counts.v2,
                events: events,
                v1Views: counts.v1Views,
                ledger: counts.ledger,
                delivered: counts.delivered,
                dead: counts.dead,
                pending: counts.pending
            ),
            storeBytes: storeBytes,
            bytesPerNotification: options.notifications > 0
                ? (Double(storeBytes) / Double(options.notifications) * 10).rounded() / 10 : 0,
            steps: steps,
            serve: Serve(
                startSeconds: startSeconds,
                rssMBAfterStart: rssAfterStart,
                rssMBAfterReports: rssAfterReports,
                peakRSSMB: servePeak,
                exitStatus: serveStatus
            ),
            ingestBigStore: ingestBig,
            ingestEmptyStore: ingestEmpty
        )
    }

    /// DIR is created if missing; one that holds a store already is refused (a kept run's is the lead's to keep).
    static func prepareFolder(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for name in ["gateway.db", "gateway.db-wal", "root.der"]
        where FileManager.default.fileExists(atPath: dir + "/" + name) {
            throw Failure(description: "\(dir) holds a store already (\(name)): give an empty or new folder")
        }
    }

    /// The config for the store in DIR: the bench app (V1 authoritative, both environments, verifyReceipt at the rig's
    /// fake), a webhook downstream taking both generations and a V1 pass-through for production, the admin API on.
    static func configText(postgres: Bool, verifyReceiptPort: UInt16, sinkPort: UInt16) -> String {
        let store =
            postgres ? #"{ "postgres": { "url_env": "IAPGW_BENCH_STORE_URL" } }"# : #"{ "sqlite": "gateway.db" }"#
        return """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN" },
              "store": \(store),
              "trust": { "extra_roots": ["root.der"] },
              "verify_receipt": { "production_url": "http://127.0.0.1:\(verifyReceiptPort)/verifyReceipt",
                                  "sandbox_url": "http://127.0.0.1:\(verifyReceiptPort)/sandbox/verifyReceipt" },
              "apps": [ { "bundle_id": "\(BenchRig.bundle)", "app_apple_id": 1, "environments": ["production", "sandbox"],
                          "shared_secret_env": ["\(ScaleStoreBuilder.secretName)"], "authority": "v1",
                          "downstreams": ["main", "legacy"] } ],
              "downstreams": [
                { "name": "main", "url": "http://127.0.0.1:\(sinkPort)/events", "environments": ["production", "sandbox"],
                  "shadow": true, "concurrency": 8 },
                { "name": "legacy", "kind": "v1_passthrough", "url": "http://127.0.0.1:\(sinkPort)/legacy",
                  "environments": ["production"] }
              ]
            }

            """
    }

    static func sqliteBytes(_ path: String) -> Int64 {
        ["", "-wal"].reduce(0) { total, suffix in
            var info = stat()
            return total + (stat(path + suffix, &info) == 0 ? Int64(info.st_size) : 0)
        }
    }

    /// Ingest at the offered rate for `ingestSeconds`: 4 V2 bodies for every V1, signed before the run.
    static func openLoop(
        url: String,
        rig: BenchRig,
        offset: Int,
        options: Options,
        transport: CurlTransport
    ) async throws -> Ingest {
        let count = max(1, Int(options.ingestSeconds * Double(options.rate)))
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(count)
        for i in offset..<(offset + count) { bodies.append(i % 5 == 4 ? BenchRig.v1Body(i) : try rig.v2Body(i)) }
        let latencies = Samples()
        let failures = FailureTally()
        await IngestBenchmark.openLoop(
            urls: [url],
            bodies: bodies,
            rate: options.rate,
            transport: transport,
            latencies: latencies,
            failures: failures
        )
        let sorted = latencies.all.sorted()
        return Ingest(
            p50Ms: sorted.quantile(0.5, decimals: 2),
            p99Ms: sorted.quantile(0.99, decimals: 2),
            samples: sorted.count,
            failures: failures.value,
            offeredRatePerSecond: options.rate,
            seconds: options.ingestSeconds
        )
    }

    /// The reconciliation rule's selection for every receipts run (V1 path, each environment), as a run asks for it
    /// (its budget as the limit), on the store opened here.
    static func reconcileSelection(config: GatewayConfig, environment: [String: String]) async throws -> Step {
        let store = try GatewayService.openStore(config: config, environment: environment)
        defer { store.close() }
        let settings = config.reconcile
        let time = WallClock.wallMillis()
        let limit = max(1, settings.requestsPerHour * Int(settings.everyMillis ?? 3_600_000) / 3_600_000)
        return try await inProcess {
            var selected = 0
            for app in config.apps {
                for env in app.environments.sorted(by: { $0.rawValue < $1.rawValue }) {
                    let selection = ReconcileSelection(
                        bundleID: app.bundleID,
                        environment: env,
                        path: .v1,
                        expiresFrom: time - settings.expiringWithinMillis,
                        expiresUntil: time + settings.expiringWithinMillis,
                        silentSince: time - settings.silentForMillis,
                        checkedBefore: time - settings.silentForMillis,
                        limit: limit
                    )
                    selected += try await store.read { tx in try tx.reconcileCandidates(selection) }.count
                }
            }
            return selected
        }
    }

    /// The retention purge as the hourly pass runs it, with its clock set so that the oldest day's bodies are past
    /// the retention.
    static func purge(
        config: GatewayConfig,
        environment: [String: String],
        cutoff: Int64,
        now: Int64
    ) async throws
        -> Step
    {
        let store = try GatewayService.openStore(config: config, environment: environment)
        defer { store.close() }
        return try await inProcess {
            // A page at a time, each its own transaction, as the hourly pass does (5,000 bodies a page).
            let page = 5_000
            var purged = 0
            while true {
                let n = try await store.write { tx in try tx.purgeBodies(olderThan: cutoff, now: now, limit: page) }
                purged += n
                if n < page { return purged }
            }
        }
    }

    /// Times `work` in this process, with this process's peak RSS during it (the peak is reset first).
    static func inProcess(_ work: () async throws -> Int) async throws -> Step {
        // "5" resets the peak (VmHWM) to the resident set now (proc(5), clear_refs).
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        if fd >= 0 {
            _ = write(fd, "5", 1)
            close(fd)
        }
        let clock = ContinuousClock()
        let start = clock.now
        let rows = try await work()
        return Step(
            seconds: seconds(clock.now - start),
            peakRSSMB: selfStatusMB("VmHWM:"),
            rows: rows,
            inProcess: true
        )
    }

    static func selfStatusMB(_ field: String) -> Double {
        guard let data = try? Data(contentsOf: URL(filePath: "/proc/self/status")) else { return 0 }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(field) {
            let kb = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
            return (kb / 1024 * 10).rounded() / 10
        }
        return 0
    }

    static func seconds(_ d: Duration) -> Double {
        ((Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 1000).rounded() / 1000
    }
}
