internal import Store
import Canonical
import Gateway
import HTTPClient
import V1Adapter
import WireJSON

#if canImport(Glibc)
import Glibc
#endif

// Argument parsing and wiring only: every behaviour lives in the Gateway module.

let usage = """
    iap-gateway — Apple App Store Server Notifications (V1 and V2) gateway

    USAGE
      iap-gateway verify [--config FILE] [--root DER]... [--bundle-id B] [--environment production|sandbox]
                         [--app-apple-id N] [--shared-secret-env VAR] [--verify-receipt] FILE|FOLDER...
          Authenticate and normalize saved bodies: V2 notifications, bare signed transactions / renewal infos,
          V1 notifications (secrets from --config or --shared-secret-env; events from the body, verified: false,
          unless --verify-receipt asks the config's verifyReceipt URLs) and saved verifyReceipt answers.
          A FOLDER means its *.json files (golden *.expected.json skipped). One JSON line per file;
          exit 0 when all are ok, 1 otherwise.
      iap-gateway serve --config FILE [--demo-verify-time T]
          Run the gateway: POST /notifications and GET /healthz; GET /metrics and the admin API on admin.listen
          (bearer token from admin.token_env). Stops gracefully on SIGTERM / SIGINT. --demo-verify-time (demos
          with saved samples only) judges sandbox notifications' freshness as of T instead of the clock.
      iap-gateway replay --config FILE (--id EVENT_ID | --since T [--until T] | --dead-letters)
          Queue deliveries again. Times are ISO-8601 or relative (7d, 12h).
      iap-gateway quarantine --config FILE list|replay [--lane untrusted|genuine] [--id ROW]
          Show quarantined bodies, or re-run them after a config fix (each judged as of its arrival; a row that
          still fails stays, with its outcome).
      iap-gateway subscription --config FILE ORIGINAL_TRANSACTION_ID
          One subscription's state per path and its event history.
      iap-gateway report --config FILE [--bundle B] [--since T] [--format table|json|html]
          The side-by-side comparison per bundle and environment: events per generation, pairs compared,
          agreement rate over time, disagreements by field with examples, one-sided counts, and the readiness
          verdict with its rule. html is one self-contained page.
      iap-gateway cutover --config FILE BUNDLE [--environment E] --to v2|v1 [--reason TEXT] [--force]
          Make V2 (or V1 again) authoritative for BUNDLE's new notifications; stored, logged with who and why.
          Moving to V2 needs a ready verdict unless --force; moving back to V1 is always allowed.
      iap-gateway backfill --config FILE --since T [--until T] [--bundle B] [--environment E]
          Fetch Apple's notification history (App Store Server API) and feed what was missed through the normal
          pipeline (verified, deduplicated; delivered by the running gateway).
      iap-gateway test-notification --config FILE --bundle B --environment production|sandbox
          Ask Apple to send a test notification and report Apple's delivery attempts and whether it arrived.
      iap-gateway receive [--listen HOST:PORT] [--secret-env VAR]
          A demo downstream: prints each delivery (and whether its webhook signature verifies) as a JSON line.
      iap-gateway bench verify [--seconds N]
          Verification throughput against libcrypto's own P-256 verify bound (build with -c release).
      iap-gateway bench ingest [--seconds N] [--no-delivery]
          The whole service on loopback (generated test PKI, temporary SQLite, local downstream): durable
          notifications/s, p50/p99 latency at 500/s offered, peak RSS (build with -c release).
      iap-gateway bench soak [--minutes N] [--rate R]
          The whole service at R notifications/s (200) for N minutes (10), delivering to a downstream that fails
          20 % of requests and is down for a minute in the middle: RSS over time, delivered = accepted, p99.
      iap-gateway bench flood [--count N]
          N (200) bodies of 1 MiB without any secret: how much the store and the log grow (the untrusted lane's cap).
      iap-gateway simulate pki --out DIR
          Create the simulator's Apple-shaped test PKI (DIR/root.der: trust it with trust.extra_roots, sandbox only)
          and App Store Server API key (DIR/api-key.p8) once; later runs keep them.
      iap-gateway simulate list
          The lifecycles, one per line, name first.
      iap-gateway simulate lifecycle NAME|all --pki DIR --bundle-id B --shared-secret-env VAR (--to URL | --out FOLDER)
                         [--version v1|v2|both] [--speed SECONDS_PER_MONTH|max]
          Play a lifecycle: POST each step's V2 signedPayload and/or V1 body to URL (exit 0 only if every one got a
          2xx) and/or write them to FOLDER. --speed max (default) sends at once with dates in the recent past;
          --speed 10 makes a month last 10 real seconds.
      iap-gateway simulate serve-apple --listen HOST:PORT --pki DIR [--notify URL]
          Fake Apple from the same state: /verifyReceipt, /sandbox/verifyReceipt and the App Store Server API
          (/inApps/..., ES256 bearer tokens checked against DIR's API key); test notifications go to --notify.
      iap-gateway help

    """

func printLine(_ s: String) {
    print(s)
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandleOutput.stderr("iap-gateway: \(message)\n")
    exit(status)
}

let args = Array(CommandLine.arguments.dropFirst())
guard let verb = args.first else {
    FileHandleOutput.stderr(usage)
    exit(2)
}
let rest = Array(args.dropFirst())

switch verb {
case "verify":
    let a: Arguments
    do {
        a = try Arguments(
            rest, valueFlags: ["config", "root", "bundle-id", "environment", "app-apple-id", "shared-secret-env"],
            switchFlags: ["verify-receipt"])
    } catch { fail(error.description) }
    guard !a.positionals.isEmpty else { fail("verify needs at least one FILE") }
    var options = VerifyCommand.Options()
    options.configPath = a.value("config")
    options.extraRoots = a.all("root")
    options.bundleID = a.value("bundle-id")
    options.sharedSecretEnv = a.value("shared-secret-env")
    if let e = a.value("environment") {
        guard e == "production" || e == "sandbox" else { fail("--environment must be production or sandbox") }
        options.environment = AppStoreEnvironment(rawValue: e)
    }
    if let n = a.value("app-apple-id") {
        guard let id = Int64(n) else { fail("--app-apple-id must be an integer") }
        options.appAppleID = id
    }
    var receiptClient: VerifyReceiptClient?
    if a.has("verify-receipt") {
        guard let path = options.configPath else { fail("--verify-receipt needs --config (verifyReceipt URLs, secrets)") }
        do {
            receiptClient = try GatewayConfig.load(path: path).verifyReceiptClient(transport: CurlTransport())
        } catch { fail("config: \(error)") }
    }
    let command: VerifyCommand
    do { command = try VerifyCommand(options: options, receiptClient: receiptClient) } catch { fail("config: \(error)") }
    var allOK = true
    for file in VerifyCommand.expand(paths: a.positionals) {
        let report = await command.run(file: file)
        allOK = allOK && report.ok
        printLine(JSONOutput.string(report))
    }
    exit(allOK ? 0 : 1)

case "serve":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["config", "demo-verify-time"]) } catch { fail(error.description) }
    guard let path = a.value("config") else { fail("serve needs --config FILE") }
    var demoTime: Int64?
    if let text = a.value("demo-verify-time") {
        guard let t = TimeText.milliseconds(text, now: WallClock.wallMillis()) else { fail("--demo-verify-time: not a time") }
        demoTime = t
    }
    exit(await ServeCommand.run(configPath: path, demoSandboxVerifyTime: demoTime))

case "receive":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["listen", "secret-env"]) } catch { fail(error.description) }
    exit(await ReceiveCommand.run(listen: a.value("listen") ?? "127.0.0.1:9000", secretEnv: a.value("secret-env"),
                                  environment: ProcessEnvironment.variables))

case "replay", "subscription", "quarantine":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["config", "id", "since", "until", "lane"], switchFlags: ["dead-letters"]) } catch {
        fail(error.description)
    }
    guard let path = a.value("config") else { fail("\(verb) needs --config FILE") }
    let config: GatewayConfig
    do { config = try GatewayConfig.load(path: path) } catch { fail("config: \(error)") }
    let now = WallClock.wallMillis()
    do {
        switch verb {
        case "replay":
            let selection: Operations.ReplaySelection
            if let id = a.value("id") {
                selection = .eventID(id)
            } else if a.has("dead-letters") {
                selection = .deadLetters
            } else if let since = a.value("since") {
                guard let s = TimeText.milliseconds(since, now: now) else { fail("--since: not a time") }
                let until = try a.value("until").map { text throws -> Int64 in
                    guard let u = TimeText.milliseconds(text, now: now) else { fail("--until: not a time") }
                    return u
                } ?? Int64.max
                selection = .range(since: s, until: until)
            } else {
                fail("replay needs --id, --since [--until] or --dead-letters")
            }
            let (operations, store) = try GatewayService.maintenance(config: config, now: WallClock.wallMillis)
            let n = try operations.replay(selection)
            store.close()
            printLine("{\"requeued\":\(n)}")
        case "subscription":
            guard let otid = a.positionals.first else { fail("subscription needs an ORIGINAL_TRANSACTION_ID") }
            let (operations, store) = try GatewayService.maintenance(config: config, now: WallClock.wallMillis)
            printLine(String(decoding: try operations.subscription(otid).canonicalBytes(), as: UTF8.self))
            store.close()
        default:
            var selection = Operations.QuarantineSelection(limit: 10_000)
            if let lane = a.value("lane") {
                guard let l = QuarantineRecord.Lane(rawValue: lane) else { fail("--lane must be untrusted or genuine") }
                selection.lane = l
            }
            if let id = a.value("id") {
                guard let n = Int64(id) else { fail("--id must be a quarantine row id") }
                selection.id = n
            }
            switch a.positionals.first {
            case "list":
                let (operations, store) = try GatewayService.maintenance(config: config, now: WallClock.wallMillis)
                printLine(String(decoding: try operations.quarantineList(lane: selection.lane, limit: 10_000).canonicalBytes(), as: UTF8.self))
                store.close()
            case "replay":
                let service = try GatewayService(config: config, dependencies: .command())
                let results = try service.operations.quarantineReplay(
                    ingest: service.ingest, secrets: service.v1SecretsForReplay, selection: selection)
                printLine(String(decoding: results.canonicalBytes(), as: UTF8.self))
                await service.shutdown()
            default:
                fail("quarantine needs list or replay")
            }
        }
    } catch {
        fail("\(error)", status: 1)
    }
    exit(0)

case "report", "cutover":
    let a: Arguments
    do {
        a = try Arguments(rest, valueFlags: ["config", "bundle", "since", "format", "environment", "to", "reason"], switchFlags: ["force"])
    } catch { fail(error.description) }
    guard let path = a.value("config") else { fail("\(verb) needs --config FILE") }
    let config: GatewayConfig
    do { config = try GatewayConfig.load(path: path) } catch { fail("config: \(error)") }
    let now = WallClock.wallMillis()
    do {
        let (_, store) = try GatewayService.maintenance(config: config, now: WallClock.wallMillis)
        defer {
            store.close()
        }
        let ledger = CompareLedger(store: store, config: config)
        if verb == "report" {
            let since = try a.value("since").map { text throws -> Int64 in
                guard let s = TimeText.milliseconds(text, now: now) else { fail("--since: not a time") }
                return s
            } ?? now - config.compareSettings.rule.windowMillis
            let report = try ledger.report(bundleID: a.value("bundle"), since: since, until: now)
            let format = a.value("format") ?? "table"
            guard let rendered = ReportRenderer.render(report, format: format) else { fail("--format must be table, json or html") }
            print(String(decoding: rendered.body, as: UTF8.self), terminator: format == "json" ? "\n" : "")
        } else {
            guard let bundle = a.positionals.first else { fail("cutover needs a BUNDLE") }
            guard let to = a.value("to") else { fail("cutover needs --to v2 or --to v1") }
            guard let app = config.apps.first(where: { $0.bundleID == bundle }) else { fail("\(bundle) is not configured", status: 1) }
            let environment: String
            if let e = a.value("environment") {
                environment = e
            } else if app.environments.count == 1, let only = app.environments.first {
                environment = only.rawValue
            } else {
                fail("\(bundle) takes several environments: give --environment production or sandbox")
            }
            do {
                let record = try ledger.cutover(bundleID: bundle, environment: environment, to: to, who: ProcessEnvironment.userName,
                                                reason: a.value("reason"), force: a.has("force"), now: now)
                printLine(JSONOutput.string(record))
            } catch let error as CutoverError {
                fail(error.description, status: 1)
            }
        }
    } catch {
        fail("\(error)", status: 1)
    }
    exit(0)

case "backfill", "test-notification":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["config", "since", "until", "bundle", "environment"]) } catch { fail(error.description) }
    guard let path = a.value("config") else { fail("\(verb) needs --config FILE") }
    let config: GatewayConfig
    do { config = try GatewayConfig.load(path: path) } catch { fail("config: \(error)") }
    let environment = try a.value("environment").map { e throws -> AppStoreEnvironment in
        guard e == "production" || e == "sandbox" else { fail("--environment must be production or sandbox") }
        return AppStoreEnvironment(rawValue: e)
    }
    let now = WallClock.wallMillis()
    let service: GatewayService
    do { service = try GatewayService(config: config, dependencies: .command()) } catch { fail("config: \(error)") }
    guard let api = service.appStoreAPI else {
        await service.shutdown()
        fail("\(verb) needs app_store_api (issuer_id, key_id, private_key_env) in the config")
    }
    do {
        if verb == "backfill" {
            guard let since = a.value("since").flatMap({ TimeText.milliseconds($0, now: now) }) else { fail("backfill needs --since T") }
            let until = a.value("until").flatMap { TimeText.milliseconds($0, now: now) } ?? now
            for result in try await AppStoreAPICommands.backfill(
                service: service, source: api, since: since, until: until, bundleID: a.value("bundle"), environment: environment)
            {
                printLine(JSONOutput.string(result))
            }
        } else {
            guard let bundle = a.value("bundle"), let client = api.client(for: bundle) else { fail("test-notification needs --bundle B (configured)") }
            guard let environment else { fail("test-notification needs --environment production or sandbox") }
            printLine(JSONOutput.string(try await AppStoreAPICommands.testNotification(client: client, environment: environment, journal: service.store)))
        }
    } catch {
        await service.shutdown()
        fail("\(error)", status: 1)
    }
    await service.shutdown()
    exit(0)

case "bench":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["seconds", "minutes", "rate", "count"], switchFlags: ["no-delivery"]) } catch {
        fail(error.description)
    }
    let secondsText = a.value("seconds") ?? "3"
    guard let seconds = Double(secondsText), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
        fail("--seconds must be a number of seconds in (0, 86400]")
    }
    do {
        switch a.positionals.first {
        case "verify": printLine(JSONOutput.string(try VerifyBenchmark.run(secondsPerPhase: seconds)))
        case "ingest": printLine(JSONOutput.string(try await IngestBenchmark.run(seconds: seconds, deliver: !a.has("no-delivery"))))
        case "soak":
            guard let minutes = Double(a.value("minutes") ?? "10"), minutes.isFinite, minutes > 0, minutes <= 24 * 60 else {
                fail("--minutes must be a number of minutes in (0, 1440]")
            }
            guard let rate = Int(a.value("rate") ?? "200"), (1...5_000).contains(rate) else { fail("--rate must be 1...5000 per second") }
            let result = try await SoakBenchmark.run(minutes: minutes, rate: rate) { line in FileHandleOutput.stderr("soak: \(line)\n") }
            printLine(JSONOutput.string(result))
        case "flood":
            guard let count = Int(a.value("count") ?? "200"), (1...100_000).contains(count) else { fail("--count must be 1...100000") }
            printLine(JSONOutput.string(try await FloodBenchmark.run(count: count)))
        default: fail("bench needs a target: verify, ingest, soak or flood")
        }
    } catch {
        fail("bench failed: \(error)", status: 1)
    }
    exit(0)

case "simulate":
    let a: Arguments
    do {
        a = try Arguments(rest, valueFlags: ["out", "to", "pki", "bundle-id", "shared-secret-env", "version", "speed", "listen", "notify"])
    } catch { fail(error.description) }
    switch a.positionals.first {
    case "pki":
        guard let out = a.value("out") else { fail("simulate pki needs --out DIR") }
        do { printLine(try SimulateCommand.pki(out: out, now: WallClock.wallMillis())) } catch { fail("\(error)", status: 1) }
        exit(0)
    case "list":
        SimulateCommand.list().forEach(printLine)
        exit(0)
    case "lifecycle":
        guard a.positionals.count == 2 else { fail("simulate lifecycle needs one NAME (or all)") }
        guard let pki = a.value("pki") else { fail("simulate lifecycle needs --pki DIR") }
        guard let bundleID = a.value("bundle-id") else { fail("simulate lifecycle needs --bundle-id B") }
        guard let variable = a.value("shared-secret-env") else { fail("simulate lifecycle needs --shared-secret-env VAR") }
        guard let secret = ProcessEnvironment.variables[variable], !secret.isEmpty else { fail("\(variable) is not set") }
        let names = a.positionals[1] == "all" ? SimulateCommand.lifecycleNames : [a.positionals[1]]
        var options = SimulateCommand.LifecycleOptions(name: "", to: a.value("to"), pkiFolder: pki, bundleID: bundleID, sharedSecret: secret)
        if let v = a.value("version") {
            guard let version = SimulateCommand.LifecycleOptions.Version(rawValue: v) else { fail("--version must be v1, v2 or both") }
            options.version = version
        }
        if let speed = a.value("speed"), speed != "max" {
            guard let seconds = Double(speed), seconds.isFinite, seconds > 0, seconds <= 31_536_000 else {
                fail("--speed must be seconds per simulated month (at most a year), or max")
            }
            options.secondsPerMonth = seconds
        }
        var allOK = true
        for name in names {
            options.name = name
            if let out = a.value("out") { options.out = names.count > 1 ? out + "/" + name : out }
            do {
                let run = try await SimulateCommand.lifecycle(
                    options, transport: CurlTransport(), now: WallClock.wallMillis,
                    sleep: { ms in try? await Task.sleep(for: .milliseconds(ms)) }, output: printLine)
                allOK = allOK && run.ok
            } catch { fail("\(error)", status: 1) }
        }
        exit(allOK ? 0 : 1)
    case "serve-apple":
        guard let pki = a.value("pki") else { fail("simulate serve-apple needs --pki DIR") }
        exit(await SimulateCommand.serveApple(
            listen: a.value("listen") ?? "127.0.0.1:8091", pkiFolder: pki, notifyURL: a.value("notify"), transport: CurlTransport()))
    default:
        fail("simulate needs pki, list, lifecycle or serve-apple")
    }

case "help", "--help", "-h":
    print(usage, terminator: "")
    exit(0)

default:
    FileHandleOutput.stderr(usage)
    fail("unknown command \(verb)")
}
