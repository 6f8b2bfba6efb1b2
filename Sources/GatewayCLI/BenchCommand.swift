internal import Benchmarks
internal import FoundationEssentials
internal import Gateway
internal import ServiceKit
internal import WireJSON

/// `iap-gateway bench verify|receipts|receipt-history|receipt-scale|ingest|soak|flood|fsync|scale|delivery-rate|isolation`:
/// the benchmarks (`Sources/Benchmarks`), each printing one JSON line.
enum BenchCommand: Command {
    static let name = "bench"
    static let usage = """
          iap-gateway bench verify [--seconds N]
              Verification throughput against libcrypto's own P-256 verify bound (build with -c release).
          iap-gateway bench receipts [--seconds N]
              App receipts read and their signatures judged per second on one thread — a real 11 KB receipt and a
              built ~100 KB one (187 purchases) — beside libcrypto's RSA-2048 verify rate in the same run and
              `openssl speed -seconds 2 rsa2048`'s (build with -c release; the target: 100 KB in at most 5 ms); then
              POST /verifyReceipt of the real service in api mode from a fresh store (200 customers' receipts of
              24 purchases): answers/s beside a bare HTTP server's, p50/p99 at 1,000/s offered, peak RSS.
          iap-gateway bench receipt-history
              A customer of 1,200 transactions asked through POST /verifyReceipt in api mode (the real service, an App
              Store Server API fake at 250 ms a call, the old backend retrying each second while answered 21005):
              Apple calls, requests and seconds until status 0, calls made by the retries after it; beside the
              receipt path's walk before pages were kept, against the same fake (build with -c release).
          iap-gateway bench receipt-scale [--customers N] [--seconds S] [--apple-rate production|sandbox|N]
                                          [--clients C] [--hang-seconds H] [--warm-clients W]
                                          [--store sqlite|postgres] [--instances N]
              POST /sandbox/verifyReceipt of the real service in api mode for a base of N customers (1000000) for S
              seconds (60): C old-backend clients (64) with signed receipts, customers drawn with a skew and 1 % of
              purchases, against an App Store Server API fake answering any customer under Apple's rate limits of the
              table given (production: 50/s per endpoint), hanging H seconds (0) mid-run; V2 notifications at 20/s
              meanwhile. Answers by status, warm and cold answers/s and p50/p99, Apple's calls, 429s and most calls in
              a second, notification p99, peak RSS, hours to fetch the whole base (build with -c release). W more
              clients (8) ask only about customers already answered meanwhile: warm_only's answers/s and p99.
              --store postgres --instances N: N gateways on one fresh schema (as bench ingest), sharing one budget of
              Apple's calls: Apple's calls/s of all of them beside the budget's rate.
          iap-gateway bench ingest [--seconds N] [--no-delivery] [--store sqlite|postgres] [--instances N]
              The whole service on loopback (generated test PKI, temporary SQLite, local downstream): durable
              notifications/s, p50/p99 latency at 500/s offered, peak RSS (build with -c release). --store postgres:
              a fresh schema (dropped afterwards) in the database IAPGW_BENCH_DATABASE_URL names (else
              IAPGW_TEST_DATABASE_URL), shared by --instances N (1) gateway processes the load alternates between.
          iap-gateway bench soak [--minutes N] [--rate R]
              The whole service at R notifications/s (200) for N minutes (10), delivering to a downstream that fails
              20 % of requests and is down for a minute in the middle: RSS over time, delivered = accepted, p99.
          iap-gateway bench flood [--count N]
              N (200) bodies of 1 MiB without any secret: how much the store and the log grow (the untrusted lane's cap).
          iap-gateway bench fsync [--seconds N] [--folder DIR]
              For N seconds (30), how long the disk under DIR (the temporary folder) takes to make 8 KiB durable,
              every 50 ms: the wait under every commit, and so the floor of p99. Run it where the store will live.
          iap-gateway bench isolation [--count N] [--clients C]
              The whole service with Apple's verifyReceipt and the alert webhook hanging: a V2 notification's latency
              and a delivery's (N one at a time, 100) quiet, while C clients (70) of one address loop on
              /verifyReceipt, and while every notification dead-letters at a second downstream whose alerts hang;
              each with its ratio to the quiet figure of the same run.
          iap-gateway bench delivery-rate [--rate R] [--outage-seconds S] [--seconds N]
              A downstream with max_per_second R (50) down for S seconds (60) while a backlog waits, then up: its
              accepted deliveries per second over N seconds (10), and whether they held within 10 % of R.
          iap-gateway bench scale --out DIR --notifications N --pairs P --subscriptions M [--store sqlite|postgres]
                                  [--keep] [--ingest-seconds S]
              Builds a store of that size in DIR (a week of V1 and V2 notifications with their events and deliveries,
              M subscriptions, P compared pairs) and DIR/gateway.json for it, then times report (table, json, html),
              GET /admin/status and /admin/report on a running serve (its RSS), subscription, replay --since 1d,
              the reconciliation selection, the retention purge and migrate-store (to a fresh PostgreSQL schema when
              IAPGW_BENCH_DATABASE_URL or IAPGW_TEST_DATABASE_URL is set), and ingest p50/p99 at 500/s on the big
              store and on an empty one (S seconds each, 10). --store postgres: the data in a fresh schema of that database. The store is
              deleted afterwards unless --keep; the config stays (the JSON line's env names what serve needs).
        """

    /// Each target's flags (`--no-delivery` takes no value).
    static let flags: [String: Set<String>] = [
        "verify": ["seconds"], "receipts": ["seconds"], "receipt-history": [],
        "receipt-scale": [
            "customers", "seconds", "apple-rate", "clients", "hang-seconds", "warm-clients", "store", "instances",
        ],
        "ingest": ["seconds", "no-delivery", "store", "instances"],
        "soak": ["minutes", "rate"],
        "flood": ["count"],
        "delivery-rate": ["rate", "outage-seconds", "seconds"],
        "isolation": ["count", "clients"],
        "fsync": ["seconds", "folder"],
        "scale": ["store", "out", "notifications", "pairs", "subscriptions", "keep", "ingest-seconds"],
    ]

    static func run(_ arguments: [String]) async throws -> Int32 {
        let all = flags.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        let a = try Arguments(
            arguments,
            valueFlags: all.subtracting(["no-delivery", "keep"]),
            switchFlags: ["no-delivery", "keep"]
        )
        guard let target = try a.positionals(atMost: 1, for: name).first, let allowed = flags[target] else {
            throw CommandError.usage(
                "bench needs a target: verify, receipts, receipt-history, receipt-scale, ingest, soak, flood, fsync, "
                    + "scale, delivery-rate or isolation"
            )
        }
        try a.only(allowed, for: "bench \(target)")
        let seconds = try a.number(
            "seconds",
            default: target == "fsync" ? 30 : 3.0,
            valid: { $0 > 0 && $0 <= 86_400 },
            "--seconds must be a number of seconds in (0, 86400]"
        )
        let minutes = try a.number(
            "minutes",
            default: 10.0,
            valid: { $0 > 0 && $0 <= 24 * 60 },
            "--minutes must be a number of minutes in (0, 1440]"
        )
        let rate = try a.number(
            "rate",
            default: 200,
            valid: { (1...5_000).contains($0) },
            "--rate must be 1...5000 per second"
        )
        let count = try a.number(
            "count",
            default: 200,
            valid: { (1...100_000).contains($0) },
            "--count must be 1...100000"
        )
        let store = a.value("store") ?? "sqlite"
        guard store == "sqlite" || store == "postgres" else {
            throw CommandError.usage("--store must be sqlite or postgres")
        }
        let instances = try a.number(
            "instances",
            default: 1,
            valid: { (1...8).contains($0) },
            "--instances must be 1...8"
        )
        guard instances == 1 || store == "postgres" else {
            throw CommandError.usage("--instances above 1 needs --store postgres (one process owns an SQLite store)")
        }
        let scale = target == "scale" ? try scaleOptions(a, postgres: store == "postgres") : nil
        var receiptScale = target == "receipt-scale" ? try receiptScaleOptions(a) : nil
        receiptScale?.postgres = store == "postgres"
        receiptScale?.instances = instances
        let line: String
        do {
            switch target {
            case "verify": line = JSONOutput.string(try VerifyBenchmark.run(secondsPerPhase: seconds))
            case "receipts": line = JSONOutput.string(try await ReceiptBenchmark.run(secondsPerPhase: seconds))
            case "receipt-history": line = JSONOutput.string(try await ReceiptHistoryBenchmark.run())
            case "receipt-scale":
                guard let receiptScale else { return 2 }
                line = JSONOutput.string(
                    try await ReceiptScaleBenchmark.run(receiptScale) { progress in
                        FileHandleOutput.stderr("receipt-scale: \(progress)\n")
                    }
                )
            case "ingest":
                line = JSONOutput.string(
                    try await IngestBenchmark.run(
                        seconds: seconds,
                        deliver: !a.has("no-delivery"),
                        postgres: store == "postgres",
                        instances: instances
                    )
                )
            case "soak":
                line = JSONOutput.string(
                    try await SoakBenchmark.run(minutes: minutes, rate: rate) { progress in
                        FileHandleOutput.stderr("soak: \(progress)\n")
                    }
                )
            case "scale":
                guard let scale else { return 2 }
                line = JSONOutput.string(
                    try await ScaleBenchmark.run(scale) { progress in FileHandleOutput.stderr("scale: \(progress)\n") }
                )
            case "delivery-rate":
                line = JSONOutput.string(
                    try await DeliveryRateBenchmark.run(
                        rate: a.value("rate") != nil ? Int(rate) : 50,
                        outageSeconds: try a.number(
                            "outage-seconds",
                            default: 60,
                            valid: { $0 >= 0 && $0 <= 3_600 },
                            "--outage-seconds must be 0...3600"
                        ),
                        seconds: a.value("seconds") != nil ? max(1, Int(seconds)) : 10
                    )
                )
            case "isolation":
                line = JSONOutput.string(
                    try await IsolationBenchmark.run(
                        count: a.value("count") != nil ? Int(count) : 100,
                        flood: try a.number(
                            "clients",
                            default: 70,
                            valid: { (1...1_000).contains($0) },
                            "--clients must be 1...1000"
                        )
                    )
                )
            case "fsync":
                let folder = a.value("folder") ?? FileManager.default.temporaryDirectory.path()
                line = JSONOutput.string(try await FsyncBenchmark.run(seconds: seconds, folder: folder))
            default: line = JSONOutput.string(try await FloodBenchmark.run(count: count))
            }
        } catch {
            throw CommandError.failure("bench failed: \(error)")
        }
        print(line)
        return 0
    }

    /// `bench receipt-scale`'s flags, each with its default.
    static func receiptScaleOptions(_ a: Arguments) throws -> ReceiptScaleBenchmark.Options {
        var options = ReceiptScaleBenchmark.Options()
        options.customers = try a.number(
            "customers",
            default: options.customers,
            valid: { (1...100_000_000).contains($0) },
            "--customers must be 1...100000000"
        )
        options.seconds = try a.number(
            "seconds",
            default: options.seconds,
            valid: { $0 > 0 && $0 <= 86_400 },
            "--seconds must be a number of seconds in (0, 86400]"
        )
        if let text = a.value("apple-rate") {
            guard let rate = ReceiptScaleBenchmark.AppleRate(text) else {
                throw CommandError.usage("--apple-rate must be production, sandbox or 1...100000 per second")
            }
            options.appleRate = rate
        }
        options.clients = try a.number(
            "clients",
            default: options.clients,
            valid: { (1...1_000).contains($0) },
            "--clients must be 1...1000"
        )
        options.hangSeconds = try a.number(
            "hang-seconds",
            default: 0.0,
            valid: { $0 >= 0 && $0 < options.seconds },
            "--hang-seconds must be a number of seconds in [0, --seconds)"
        )
        options.warmClients = try a.number(
            "warm-clients",
            default: options.warmClients,
            valid: { (0...1_000).contains($0) },
            "--warm-clients must be 0...1000"
        )
        return options
    }

    /// `bench scale`'s flags: `--out`, `--notifications`, `--pairs` and `--subscriptions` are required.
    static func scaleOptions(_ a: Arguments, postgres: Bool) throws -> ScaleBenchmark.Options {
        guard let out = a.value("out"), !out.isEmpty else { throw CommandError.usage("bench scale needs --out DIR") }
        func count(_ name: String, _ range: ClosedRange<Int>) throws -> Int {
            guard a.value(name) != nil else { throw CommandError.usage("bench scale needs --\(name) N") }
            return try a.number(
                name,
                default: 0,
                valid: { range.contains($0) },
                "--\(name) must be \(range.lowerBound)...\(range.upperBound)"
            )
        }
        var options = ScaleBenchmark.Options(
            out: out,
            notifications: try count("notifications", 1...100_000_000),
            pairs: try count("pairs", 0...100_000_000),
            subscriptions: try count("subscriptions", 1...100_000_000)
        )
        options.postgres = postgres
        options.keep = a.has("keep")
        options.ingestSeconds = try a.number(
            "ingest-seconds",
            default: 10.0,
            valid: { $0 > 0 && $0 <= 3_600 },
            "--ingest-seconds must be a number of seconds in (0, 3600]"
        )
        return options
    }
}
