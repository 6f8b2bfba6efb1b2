internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
public import HTTPClient
internal import HTTPServer
internal import ServiceKit
public import Simulator
internal import SimulatorServer
internal import WireJSON

/// `iap-gateway simulate`: the simulated App Store (docs/architecture.md, "The simulated App Store") — its PKI, its lifecycles sent to a gateway (or
/// written to a folder) and its fake Apple endpoints; the flags and the output here, the playing and serving in
/// `SimulatorServer` (``Simulation``, ``FakeAppleServer``).
public enum SimulateCommand: Command {
    static let name = "simulate"
    static let usage = """
          iap-gateway simulate pki --out DIR
              Create the simulator's Apple-shaped test PKI (DIR/root.der: trust it with trust.extra_roots, sandbox only),
              App Store Server API key (DIR/api-key.p8), App Store Connect API key (DIR/asc-key.p8) and receipt chain
              (DIR/receipt-root.der: trust it with trust.extra_receipt_roots) once; later runs keep them (a folder
              without asc-key.p8 or receipt-root.der gets one). Prints the files and the keys' ids.
          iap-gateway simulate receipt ORIGINAL_TRANSACTION_ID --pki DIR
              The app receipt the simulated subscription's device holds now (base64 of a PKCS#7 receipt signed by the
              receipt chain): what an app sends its backend, for POST /verifyReceipt. Also GET /fake/receipt on
              serve-apple.
          iap-gateway simulate list
              The lifecycles, one per line, name first.
          iap-gateway simulate lifecycle NAME|all --pki DIR --bundle-id B --shared-secret-env VAR (--to URL | --out FOLDER)
                             [--version v1|v2|both|apple [--apple URL]] [--speed SECONDS_PER_MONTH|max]
                             [--drop FRACTION [--seed N]] [--outage FROM..TO] [--consumption-wait SECONDS]
              Play a lifecycle: POST each step's V2 signedPayload and/or V1 body to URL (exit 0 only if every one got a
              2xx) and/or write them to FOLDER. --speed max (default) sends at once with dates in the recent past;
              --speed 10 makes a month last 10 real seconds.
              --version apple (needs --to and --apple URL, a running serve-apple) sends each step in the version the fake
              App Store Connect at URL says Apple sends the bundle's sandbox notifications in at that moment, asking it
              before each step (POST URL/fake/asc/notification, which counts the step as one notification sent, so a
              late-honoured version change advances); each step line says it as "apple_version".
              Lossy traffic (needs --to): --drop 0.3 withholds about 30 % of the steps, chosen by --seed (default 0:
              the same steps on every run); --outage 2..4 withholds steps 2 to 4 of each lifecycle (the "step" numbers
              printed; --outage 3 is step 3 alone). A withheld step sends none of its bodies, V1 or V2; the fake Apple
              still knows it: its subscription status, and its V2 notification in Get Notification History with a failed
              send attempt (TIMED_OUT when dropped, NO_RESPONSE in the outage; onlyFailures finds them). Each step line
              says "dropped" where it withheld, and each lifecycle ends with a line listing what was dropped.
              A refund request (refund-request, refund-request-consumable) waits up to --consumption-wait seconds
              (default 2; 0: no wait) after its CONSUMPTION_REQUEST for the consumption information the gateway sends
              the fake Apple (serve-apple on the same --pki), then Apple decides: DECLINE → REFUND_DECLINED;
              GRANT_FULL, GRANT_PRORATED, no preference or nothing within the wait → REFUND. A line after the step
              says what arrived ("consumption_info") and the "decision".
          iap-gateway simulate serve-apple --listen HOST:PORT --pki DIR [--notify URL] [--rate-limit N/s|N/m|N/h|N/SECONDS|off]
                  [--apple-rate production|sandbox|N|off]
              Fake Apple from the same state: /verifyReceipt, /sandbox/verifyReceipt, the App Store Server API
              (/inApps/..., ES256 bearer tokens checked against DIR's API key) and the App Store Connect API
              (/v1/apps..., tokens checked against DIR's asc-key.p8): per app and environment the notification URL
              (default --notify) and version (default V1). Test notifications go to the app's sandbox URL, in V2 only.
              Control endpoints (/fake/asc/state, /notification, /version, /url, /apps, /failures, /lag) let tests
              fail the next calls and make a version change honoured late.
              --rate-limit 10/s answers 429 (errorCode 4290000, Retry-After in seconds) to an app's requests beyond 10
              in any second (kept in DIR's state, off by default; off clears it).
              --apple-rate production enforces Apple's published App Store Server API rate limits per app, endpoint
              and environment (per second and per hour; sandbox: 10 %; N: every endpoint at N a second), answering
              Apple's 429 with Retry-After as a UNIX time in milliseconds; GET /fake/api/stats counts calls and 429s
              (kept in DIR's state, off by default; off clears it).
        """

    /// Each subcommand's flags.
    static let flags: [String: Set<String>] = [
        "pki": ["out"], "list": [],
        "lifecycle": [
            "pki", "bundle-id", "shared-secret-env", "to", "out", "version", "apple", "speed", "drop", "seed", "outage",
            "consumption-wait",
        ],
        "serve-apple": ["listen", "pki", "notify", "rate-limit", "apple-rate"],
        "receipt": ["pki"],
    ]

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: flags.values.reduce(into: Set<String>()) { $0.formUnion($1) })
        guard let action = a.positionals.first, let allowed = flags[action] else {
            throw CommandError.usage("simulate needs pki, list, lifecycle, receipt or serve-apple")
        }
        try a.only(allowed, for: "simulate \(action)")
        switch action {
        case "pki":
            _ = try a.positionals(atMost: 1, for: "simulate pki")
            guard let out = a.value("out") else { throw CommandError.usage("simulate pki needs --out DIR") }
            print(try pki(out: out, now: WallClock.wallMillis()))
            return 0
        case "list":
            _ = try a.positionals(atMost: 1, for: "simulate list")
            for line in list() { print(line) }
            return 0
        case "lifecycle":
            return try await lifecycle(a)
        case "receipt":
            guard a.positionals.count == 2 else {
                throw CommandError.usage("simulate receipt needs one ORIGINAL_TRANSACTION_ID")
            }
            guard let pki = a.value("pki") else { throw CommandError.usage("simulate receipt needs --pki DIR") }
            let fake = try FakeAppleServer(pki: pki, notifyURL: nil, transport: CurlTransport())
            do {
                print(try fake.receipt(originalTransactionID: a.positionals[1]))
            } catch let e as SimulatorError {
                throw CommandError.failure("simulate receipt: \(e.reason)")
            }
            return 0
        default:
            _ = try a.positionals(atMost: 1, for: "simulate serve-apple")
            guard let pki = a.value("pki") else { throw CommandError.usage("simulate serve-apple needs --pki DIR") }
            var rateLimit: SimWorld.APIRateLimit?? = nil
            if let text = a.value("rate-limit") {
                guard let limit = rateLimitSetting(text) else {
                    throw CommandError.usage("--rate-limit must be N/s, N/m, N/h or N/SECONDS (N at least 1), or off")
                }
                rateLimit = .some(limit)
            }
            var appleRate: AppleRateLimits?? = nil
            if let text = a.value("apple-rate") {
                guard let setting = AppleRateLimits.setting(text) else {
                    throw CommandError.usage(
                        "--apple-rate must be production, sandbox, N (1 to 100000 a second) or off"
                    )
                }
                appleRate = .some(setting)
            }
            return await serveApple(
                listen: a.value("listen") ?? "127.0.0.1:8091",
                pkiFolder: pki,
                notifyURL: a.value("notify"),
                rateLimit: rateLimit,
                appleRateLimits: appleRate,
                transport: CurlTransport()
            )
        }
    }

    /// `simulate lifecycle NAME|all …`: 0 when every body sent got a 2xx.
    static func lifecycle(_ a: Arguments) async throws -> Int32 {
        guard a.positionals.count == 2 else { throw CommandError.usage("simulate lifecycle needs one NAME (or all)") }
        guard let pki = a.value("pki") else { throw CommandError.usage("simulate lifecycle needs --pki DIR") }
        guard let bundleID = a.value("bundle-id") else {
            throw CommandError.usage("simulate lifecycle needs --bundle-id B")
        }
        guard let variable = a.value("shared-secret-env") else {
            throw CommandError.usage("simulate lifecycle needs --shared-secret-env VAR")
        }
        guard let secret = ProcessEnvironment.variables[variable], !secret.isEmpty else {
            throw CommandError.usage("\(variable) is not set")
        }
        let names = a.positionals[1] == "all" ? lifecycleNames : [a.positionals[1]]
        var options = Simulation.LifecycleOptions(
            name: "",
            to: a.value("to"),
            pkiFolder: pki,
            bundleID: bundleID,
            sharedSecret: secret
        )
        if let v = a.value("version") {
            guard let version = Simulation.LifecycleOptions.Version(rawValue: v) else {
                throw CommandError.usage("--version must be v1, v2, both or apple")
            }
            options.version = version
        }
        options.apple = a.value("apple")
        if options.version == .apple, options.apple == nil || options.to == nil {
            throw CommandError.usage("--version apple needs --to URL and --apple URL (a simulate serve-apple)")
        }
        if options.apple != nil, options.version != .apple {
            throw CommandError.usage("--apple goes with --version apple")
        }
        if let speed = a.value("speed"), speed != "max" {
            guard let seconds = Double(speed), seconds.isFinite, seconds > 0, seconds <= 31_536_000 else {
                throw CommandError.usage("--speed must be seconds per simulated month (at most a year), or max")
            }
            options.secondsPerMonth = seconds
        }
        if let text = a.value("consumption-wait") {
            guard let seconds = Double(text), seconds.isFinite, (0...600).contains(seconds) else {
                throw CommandError.usage("--consumption-wait must be seconds from 0 to 600")
            }
            options.consumptionWaitMillis = Int64(seconds * 1000)
        }
        options.drop = try dropPlan(a)
        if options.drop != nil, options.to == nil { throw CommandError.usage("--drop and --outage need --to URL") }
        var allOK = true
        for name in names {
            options.name = name
            if let out = a.value("out") { options.out = names.count > 1 ? out + "/" + name : out }
            let run = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: WallClock.wallMillis,
                sleep: { ms in try? await Task.sleep(for: .milliseconds(ms)) },
                output: { print($0) }
            )
            allOK = allOK && run.ok
        }
        return allOK ? 0 : 1
    }

    /// `--drop FRACTION [--seed N] [--outage FROM..TO]`: nil when neither is given.
    static func dropPlan(_ a: Arguments) throws -> DropPlan? {
        guard a.value("drop") != nil || a.value("outage") != nil else {
            if a.value("seed") != nil { throw CommandError.usage("--seed goes with --drop") }
            return nil
        }
        let fraction = try a.number(
            "drop",
            default: 0.0,
            valid: { $0.isFinite && (0...1).contains($0) },
            "--drop must be a fraction from 0 to 1"
        )
        let seed = try a.number(
            "seed",
            default: UInt64(0),
            valid: { _ in true },
            "--seed must be a whole number from 0"
        )
        var outage: ClosedRange<Int>?
        if let text = a.value("outage") {
            let ends = text.split(separator: ".", omittingEmptySubsequences: false)
            let bounds =
                ends.count == 1 ? [ends[0], ends[0]] : ends.count == 3 && ends[1].isEmpty ? [ends[0], ends[2]] : []
            guard bounds.count == 2, let from = Int(bounds[0]), let to = Int(bounds[1]), from >= 1, to >= from else {
                throw CommandError.usage("--outage must be FROM..TO, step numbers from 1 (or one step number)")
            }
            outage = from...to
        }
        return try DropPlan(fraction: fraction, seed: seed, outage: outage)
    }

    /// `--rate-limit N/s|N/m|N/h|N/SECONDS`, or `off` (an outer nil); nil when it is neither.
    static func rateLimitSetting(_ text: String) -> SimWorld.APIRateLimit?? {
        if text == "off" { return .some(nil) }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let requests = Int(parts[0]), requests >= 1 else { return nil }
        let seconds: Int64? =
            switch parts[1] {
            case "s": 1
            case "m": 60
            case "h": 3600
            default: Int64(parts[1])
            }
        guard let seconds, (1...86_400).contains(seconds) else { return nil }
        return .some(SimWorld.APIRateLimit(requests: requests, windowSeconds: seconds))
    }

    /// `simulate pki --out DIR`: creates the PKI and both API keys once (later runs keep them). Prints what to
    /// configure: the files, the In-App Purchase key's id (`key_id`), the App Store Connect key's (`asc_key_id`) and
    /// the team's issuer id, the same for both.
    public static func pki(out folder: String, now: Int64) throws -> String {
        let pki = try SimulatorPKI.loadOrCreate(folder: folder, now: now)
        let line: [(key: String, value: JSONValue)] = [
            ("root", .string(pki.folder + "/root.der")), ("api_key", .string(pki.folder + "/api-key.p8")),
            ("key_id", .string(SimulatorPKI.apiKeyID)), ("issuer_id", .string(SimulatorPKI.issuerID)),
            ("asc_key", .string(pki.folder + "/asc-key.p8")), ("asc_key_id", .string(SimulatorPKI.ascKeyID)),
            ("root_sha256", .string(Hex.encode(SHA256.hash(pki.root.der)))),
            ("receipt_root", .string(pki.folder + "/receipt-root.der")),
        ]
        return String(decoding: JSONValue.object(JSONObject(line)).canonicalBytes(), as: UTF8.self)
    }

    public static var lifecycleNames: [String] { Lifecycles.all.map(\.name) }

    /// `simulate list`: one line per lifecycle, its name first (those `all` leaves out, ``Lifecycles/byNameOnly``,
    /// last).
    public static func list() -> [String] {
        (Lifecycles.all + Lifecycles.byNameOnly).map { l in
            l.name + "  " + l.summary + (l.v1Gap.map { "  [V1 gap: \($0)]" } ?? "")
        }
    }

    /// `simulate serve-apple`: the fake verifyReceipt and App Store Server API on `listen`, answering from the PKI
    /// folder's state, until SIGTERM / SIGINT. With `notifyURL`, test notifications are sent there.
    /// `rateLimit` (`--rate-limit`) is written to the state when given: `.some(nil)` clears it, nil keeps the state's.
    public static func serveApple(
        listen: String,
        pkiFolder: String,
        notifyURL: String?,
        rateLimit: SimWorld.APIRateLimit?? = nil,
        appleRateLimits: AppleRateLimits?? = nil,
        transport: any HTTPTransport
    ) async -> Int32 {
        let fake: FakeAppleServer
        do {
            fake = try FakeAppleServer(
                pki: pkiFolder,
                rateLimit: rateLimit,
                notifyURL: notifyURL,
                transport: transport,
                appleRateLimits: appleRateLimits
            )
        } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        let (host, port): (String, UInt16)
        do { (host, port) = try ListenerSettings.address(listen, field: "--listen") } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        let server: HTTPServer
        do { server = try fake.serve(host: host, port: port) } catch {
            FileHandleOutput.stderr("iap-gateway: cannot listen on \(listen): \(error)\n")
            return 2
        }
        FileHandleOutput.stderr(
            "iap-gateway: fake Apple on http://\(host):\(server.port) — /verifyReceipt, /sandbox/verifyReceipt, /inApps/..., /v1/apps... (Ctrl-C to stop)\n"
        )
        await Signals.waitForTermination()
        server.stopAccepting()
        server.stop()
        return 0
    }
}
