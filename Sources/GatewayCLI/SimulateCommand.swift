internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
public import HTTPClient
internal import HTTPServer
public import Simulator
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// `iap-gateway simulate`: the simulated App Store (docs/architecture.md, "The simulated App Store") — its PKI, its lifecycles sent to a gateway (or
/// written to a folder) and its fake Apple endpoints.
public enum SimulateCommand: Command {
    static let name = "simulate"
    static let usage = """
          iap-gateway simulate pki --out DIR
              Create the simulator's Apple-shaped test PKI (DIR/root.der: trust it with trust.extra_roots, sandbox only),
              App Store Server API key (DIR/api-key.p8) and App Store Connect API key (DIR/asc-key.p8) once; later runs
              keep them (a folder without asc-key.p8 gets one). Prints the files and the keys' ids.
          iap-gateway simulate list
              The lifecycles, one per line, name first.
          iap-gateway simulate lifecycle NAME|all --pki DIR --bundle-id B --shared-secret-env VAR (--to URL | --out FOLDER)
                             [--version v1|v2|both|apple [--apple URL]] [--speed SECONDS_PER_MONTH|max]
                             [--drop FRACTION [--seed N]] [--outage FROM..TO]
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
          iap-gateway simulate serve-apple --listen HOST:PORT --pki DIR [--notify URL] [--rate-limit N/s|N/m|N/h|N/SECONDS|off]
              Fake Apple from the same state: /verifyReceipt, /sandbox/verifyReceipt, the App Store Server API
              (/inApps/..., ES256 bearer tokens checked against DIR's API key) and the App Store Connect API
              (/v1/apps..., tokens checked against DIR's asc-key.p8): per app and environment the notification URL
              (default --notify) and version (default V1). Test notifications go to the app's sandbox URL, in V2 only.
              Control endpoints (/fake/asc/state, /notification, /version, /url, /apps, /failures, /lag) let tests
              fail the next calls and make a version change honoured late.
              --rate-limit 10/s answers 429 (errorCode 4290000, Retry-After in seconds) to an app's requests beyond 10
              in any second (kept in DIR's state, off by default; off clears it).
        """

    /// Each subcommand's flags.
    static let flags: [String: Set<String>] = [
        "pki": ["out"], "list": [],
        "lifecycle": ["pki", "bundle-id", "shared-secret-env", "to", "out", "version", "apple", "speed", "drop", "seed", "outage"],
        "serve-apple": ["listen", "pki", "notify", "rate-limit"],
    ]

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: flags.values.reduce(into: Set<String>()) { $0.formUnion($1) })
        guard let action = a.positionals.first, let allowed = flags[action] else {
            throw CommandError.usage("simulate needs pki, list, lifecycle or serve-apple")
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
            list().forEach { print($0) }
            return 0
        case "lifecycle":
            return try await lifecycle(a)
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
            return await serveApple(
                listen: a.value("listen") ?? "127.0.0.1:8091", pkiFolder: pki, notifyURL: a.value("notify"), rateLimit: rateLimit,
                transport: CurlTransport())
        }
    }

    /// `simulate lifecycle NAME|all …`: 0 when every body sent got a 2xx.
    static func lifecycle(_ a: Arguments) async throws -> Int32 {
        guard a.positionals.count == 2 else { throw CommandError.usage("simulate lifecycle needs one NAME (or all)") }
        guard let pki = a.value("pki") else { throw CommandError.usage("simulate lifecycle needs --pki DIR") }
        guard let bundleID = a.value("bundle-id") else { throw CommandError.usage("simulate lifecycle needs --bundle-id B") }
        guard let variable = a.value("shared-secret-env") else { throw CommandError.usage("simulate lifecycle needs --shared-secret-env VAR") }
        guard let secret = ProcessEnvironment.variables[variable], !secret.isEmpty else { throw CommandError.usage("\(variable) is not set") }
        let names = a.positionals[1] == "all" ? lifecycleNames : [a.positionals[1]]
        var options = LifecycleOptions(name: "", to: a.value("to"), pkiFolder: pki, bundleID: bundleID, sharedSecret: secret)
        if let v = a.value("version") {
            guard let version = LifecycleOptions.Version(rawValue: v) else { throw CommandError.usage("--version must be v1, v2, both or apple") }
            options.version = version
        }
        options.apple = a.value("apple")
        if options.version == .apple, options.apple == nil || options.to == nil {
            throw CommandError.usage("--version apple needs --to URL and --apple URL (a simulate serve-apple)")
        }
        if options.apple != nil, options.version != .apple { throw CommandError.usage("--apple goes with --version apple") }
        if let speed = a.value("speed"), speed != "max" {
            guard let seconds = Double(speed), seconds.isFinite, seconds > 0, seconds <= 31_536_000 else {
                throw CommandError.usage("--speed must be seconds per simulated month (at most a year), or max")
            }
            options.secondsPerMonth = seconds
        }
        options.drop = try dropPlan(a)
        if options.drop != nil, options.to == nil { throw CommandError.usage("--drop and --outage need --to URL") }
        var allOK = true
        for name in names {
            options.name = name
            if let out = a.value("out") { options.out = names.count > 1 ? out + "/" + name : out }
            let run = try await lifecycle(
                options, transport: CurlTransport(), now: WallClock.wallMillis,
                sleep: { ms in try? await Task.sleep(for: .milliseconds(ms)) }, output: { print($0) })
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
        let fraction = try a.number("drop", default: 0.0, valid: { $0.isFinite && (0...1).contains($0) }, "--drop must be a fraction from 0 to 1")
        let seed = try a.number("seed", default: UInt64(0), valid: { _ in true }, "--seed must be a whole number from 0")
        var outage: ClosedRange<Int>?
        if let text = a.value("outage") {
            let ends = text.split(separator: ".", omittingEmptySubsequences: false)
            let bounds = ends.count == 1 ? [ends[0], ends[0]] : ends.count == 3 && ends[1].isEmpty ? [ends[0], ends[2]] : []
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
        let seconds: Int64? = switch parts[1] {
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
        ]
        return String(decoding: JSONValue.object(JSONObject(line)).canonicalBytes(), as: UTF8.self)
    }

    public static var lifecycleNames: [String] { Lifecycles.all.map(\.name) }

    /// `simulate list`: one line per lifecycle, its name first.
    public static func list() -> [String] {
        Lifecycles.all.map { l in l.name + "  " + l.summary + (l.v1Gap.map { "  [V1 gap: \($0)]" } ?? "") }
    }

    public struct LifecycleOptions: Sendable {
        public enum Version: String, Sendable {
            case v1, v2, both
            /// Each step in the version the fake Apple at ``LifecycleOptions/apple`` sends at that moment.
            case apple
        }
        public var name: String
        public var to: String?
        public var pkiFolder: String
        public var bundleID: String
        public var sharedSecret: String
        public var version: Version = .both
        /// With ``Version/apple``: the base URL of the `simulate serve-apple` whose App Store Connect decides.
        public var apple: String?
        /// Seconds per simulated month, sleeping between steps; nil: as fast as possible, dates in the recent past.
        public var secondsPerMonth: Double?
        public var out: String?
        /// Steps withheld from `to` (lossy traffic); nil: every step is sent.
        public var drop: DropPlan?
        public init(name: String, to: String?, pkiFolder: String, bundleID: String, sharedSecret: String) {
            (self.name, self.to, self.pkiFolder, self.bundleID, self.sharedSecret) = (name, to, pkiFolder, bundleID, sharedSecret)
        }
    }

    /// What a lifecycle run did: one line per step.
    public struct StepReport: Sendable {
        public var line: String
        public var ok: Bool
    }

    /// The simulated month when running as fast as possible: long enough that grace periods and trials span
    /// distinct seconds, short enough that a whole story fits in the 10-day freshness window many times over.
    public static let fastMonthMillis: Int64 = 3_600_000

    /// `simulate lifecycle`: plays the lifecycle, keeps the simulated App Store's state in the PKI folder (the
    /// fake endpoints answer from it), and sends each step's V2 and/or V1 bodies to `to` and/or writes them to
    /// `out`. `beforeStep` runs before a step is sent and `afterStep` once it is (tests set the gateway's clock to
    /// the step's time there, and wait for its deliveries).
    public static func lifecycle(
        _ o: LifecycleOptions, transport: any HTTPTransport, now: @Sendable () -> Int64,
        sleep: @Sendable (Int64) async -> Void, output: (String) -> Void, beforeStep: (Emission) async throws -> Void = { _ in },
        afterStep: (Emission) async throws -> Void = { _ in }
    ) async throws -> LifecycleRun {
        guard let lifecycle = Lifecycles.named(o.name) else {
            throw SimulatorError("unknown_lifecycle", "no lifecycle \(o.name): `iap-gateway simulate list` names them")
        }
        guard o.to != nil || o.out != nil else { throw SimulatorError("usage", "lifecycle needs --to URL or --out FOLDER") }
        if o.version == .apple, o.apple == nil || o.to == nil {
            throw SimulatorError("usage", "--version apple needs --to URL and --apple URL (a simulate serve-apple)")
        }
        let pki = try SimulatorPKI.load(folder: o.pkiFolder)
        let store = SimStateStore(folder: o.pkiFolder)
        let emitter = Emitter(signer: pki.signer)
        // Reserve a block of ids so runs sharing the folder never reuse one.
        let firstID = try store.update { world -> Int64 in
            defer { world.nextID = world.nextID.clampedAdding(10_000) }  // a state file is input too
            return world.nextID
        }
        let plan: Lifecycle.Plan
        let paced = o.secondsPerMonth != nil
        if let seconds = o.secondsPerMonth {
            plan = try lifecycle.plan(bundleID: o.bundleID, sharedSecret: o.sharedSecret, emitter: emitter, start: now(),
                                      monthMillis: Int64(min(max(1, seconds * 1000), Double(Lifecycle.maxMonthMillis + 1))), firstID: firstID)
        } else {
            plan = try lifecycle.planEndingAt(now(), bundleID: o.bundleID, sharedSecret: o.sharedSecret, emitter: emitter,
                                              monthMillis: fastMonthMillis, firstID: firstID)
        }
        // The folder gets every body: which version Apple sends is decided step by step, for `to` only.
        if let out = o.out { try write(plan, lifecycle: lifecycle, version: o.version == .apple ? .both : o.version, to: out) }
        var allOK = true
        var dropped: [DroppedStep] = []
        for (index, e) in plan.emissions.enumerated() {
            // Only traffic to `to` is lossy: the folder gets every body.
            let drop = o.to == nil ? nil : o.drop?.reason(forEmissionAt: index, of: lifecycle.name)
            var withheld = drop.map { DroppedStep(step: index + 1, name: e.step, reason: $0) }
            if paced {
                let wait = e.at - now()
                if wait > 0 { await sleep(wait) }
            }
            try await beforeStep(e)
            // The version of this step: asked of the fake Apple (counting it as one notification sent), or fixed.
            var version = o.version
            var appleVersion: String?
            if o.version == .apple, let apple = o.apple {
                appleVersion = try await sentVersion(apple: apple, bundleID: o.bundleID, transport: transport)
                version = appleVersion == "V2" ? .v2 : .v1
            }
            try store.update { world in
                world.subscriptions[e.originalTransactionID] = e.subscription
                if let payload = e.v2SignedPayload, let uuid = e.v2NotificationUUID, version != .v1 {
                    world.notifications.append(SimSentNotification(
                        notificationUUID: uuid, bundleID: o.bundleID, signedDate: e.at, notificationType: e.v2Type ?? "", subtype: e.v2Subtype,
                        originalTransactionID: e.originalTransactionID, signedPayload: payload))
                }
            }
            var members: [(key: String, value: JSONValue)] = [
                ("lifecycle", .string(lifecycle.name)), ("step", .number(String(index + 1))), ("name", .string(e.step)),
                ("at", .number(String(e.at))), ("original_transaction_id", .string(e.originalTransactionID)),
            ]
            if let appleVersion { members.append(("apple_version", .string(appleVersion))) }
            var stepOK = true
            if version != .v1 {
                var v2: [(key: String, value: JSONValue)] = [
                    ("type", e.v2Type.map { .string($0) } ?? .null), ("subtype", e.v2Subtype.map { .string($0) } ?? .null),
                    ("expected", e.expectedV2.map { .string($0.description) } ?? .null),
                ]
                if let payload = e.v2SignedPayload, let url = o.to {
                    let result: String
                    if let drop {
                        v2.append(("dropped", .string(drop.rawValue)))
                        withheld?.v2 = DroppedStep.V2(notificationUUID: e.v2NotificationUUID, type: e.v2Type, subtype: e.v2Subtype)
                        result = drop.sendAttemptResult
                    } else {
                        let status = await send(InboundBody.v2(signedPayload: payload), to: url, transport: transport)
                        let ok = (200..<300).contains(status)
                        stepOK = stepOK && ok
                        v2.append(("status", .number(String(status))))
                        result = ok ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                    }
                    if let uuid = e.v2NotificationUUID {
                        let attempt = SendAttempt(attemptDate: now(), sendAttemptResult: result)
                        try store.update { world in
                            if let i = world.notifications.lastIndex(where: { $0.notificationUUID == uuid }) {
                                world.notifications[i].sendAttempts.append(attempt)
                            }
                        }
                    }
                }
                members.append(("v2", .object(JSONObject(v2))))
            }
            if version != .v2 {
                var v1: [JSONValue] = []
                for (i, body) in e.v1Bodies.enumerated() {
                    var item: [(key: String, value: JSONValue)] = [
                        ("type", .string(body.notificationType ?? "")),
                        ("expected", i < e.expectedV1.count ? .string(e.expectedV1[i].description) : .null),
                    ]
                    if let drop {
                        item.append(("dropped", .string(drop.rawValue)))
                        withheld?.v1.append(body.notificationType ?? "")
                    } else if let url = o.to {
                        let status = await send(Array(try JSONEncoder().encode(body)), to: url, transport: transport)
                        stepOK = stepOK && (200..<300).contains(status)
                        item.append(("status", .number(String(status))))
                    }
                    v1.append(.object(JSONObject(item)))
                }
                members.append(("v1", .array(v1)))  // empty: Apple's V1 sends nothing for this step
            }
            members.append(("ok", .bool(stepOK)))
            allOK = allOK && stepOK
            output(String(decoding: JSONValue.object(JSONObject(members)).canonicalBytes(), as: UTF8.self))
            if let withheld, withheld.count > 0 { dropped.append(withheld) }
            try await afterStep(e)
        }
        if o.drop != nil, o.to != nil { output(droppedSummary(lifecycle.name, dropped)) }
        return LifecycleRun(lifecycle: lifecycle, plan: plan, ok: allOK, dropped: dropped)
    }

    /// A played lifecycle: what was planned, whether every send got a 2xx, and what the drop plan withheld.
    public struct LifecycleRun: Sendable {
        public var lifecycle: Lifecycle
        public var plan: Lifecycle.Plan
        /// Whether every body sent got a 2xx (withheld ones are not sent).
        public var ok: Bool
        /// The steps ``LifecycleOptions/drop`` withheld, in order.
        public var dropped: [DroppedStep] = []
    }

    /// One step the drop plan withheld, and what it withheld.
    public struct DroppedStep: Sendable {
        /// 1 = the lifecycle's first step.
        public var step: Int
        public var name: String
        public var reason: DropPlan.Reason
        /// The V2 notification withheld (nil when the run sent no V2 for this step).
        public var v2: V2?
        /// The `notification_type` of each V1 body withheld.
        public var v1: [String] = []

        public struct V2: Sendable, Hashable {
            public var notificationUUID: String?
            public var type: String?
            public var subtype: String?
        }

        /// How many notification bodies were withheld.
        public var count: Int { (v2 == nil ? 0 : 1) + v1.count }
    }

    /// The line that ends a lossy run of one lifecycle: how many steps and bodies were withheld, and which.
    static func droppedSummary(_ lifecycle: String, _ dropped: [DroppedStep]) -> String {
        let items: [JSONValue] = dropped.map { d in
            var item: [(key: String, value: JSONValue)] = [("step", .number(String(d.step))), ("name", .string(d.name)),
                                                             ("reason", .string(d.reason.rawValue))]
            if let v2 = d.v2 {
                item.append(("v2", .object(JSONObject([
                    ("notification_uuid", v2.notificationUUID.map { .string($0) } ?? .null), ("type", v2.type.map { .string($0) } ?? .null),
                    ("subtype", v2.subtype.map { .string($0) } ?? .null),
                ]))))
            }
            item.append(("v1", .array(d.v1.map { .string($0) })))
            return .object(JSONObject(item))
        }
        let summary: [(key: String, value: JSONValue)] = [
            ("lifecycle", .string(lifecycle)),
            ("dropped", .object(JSONObject([
                ("steps", .number(String(dropped.count))), ("notifications", .number(String(dropped.reduce(0) { $0 + $1.count }))),
                ("items", .array(items)),
            ]))),
        ]
        return String(decoding: JSONValue.object(JSONObject(summary)).canonicalBytes(), as: UTF8.self)
    }

    /// The version the fake Apple at `apple` sends `bundleID`'s sandbox notifications in now (`V1`, `V2`), counting one
    /// notification sent (`POST /fake/asc/notification`): a late-honoured version change advances by one.
    static func sentVersion(apple: String, bundleID: String, transport: any HTTPTransport) async throws -> String {
        var base = apple
        while base.hasSuffix("/") { base.removeLast() }
        // A bundle id is letters, digits, `-` and `.`; anything else is sent as %XX.
        let encoded = bundleID.utf8.map { b -> String in
            let plain = (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E
            return plain ? String(UnicodeScalar(b)) : "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
        let query = "bundle_id=" + encoded + "&environment=sandbox"
        let request = HTTPRequest(method: .post, url: base + "/fake/asc/notification?" + query, timeoutMillis: 10_000)
        let response: HTTPResponse
        do { response = try await transport.send(request) } catch {
            throw SimulatorError("apple_unreachable", "the fake Apple at \(base) did not answer (\(error.code))")
        }
        guard response.status == 200, let answer = (try? JSONParser.parse(response.body))?.objectValue,
              let version = answer["sent_version"]?.stringValue, version == "V1" || version == "V2"
        else {
            throw SimulatorError("apple_unreachable", "the fake Apple at \(base) answered HTTP \(response.status), not its App Store Connect state")
        }
        return version
    }

    /// POSTs one body; the HTTP status, or 0 when nothing answered.
    static func send(_ body: [UInt8], to url: String, transport: any HTTPTransport) async -> Int {
        let request = HTTPRequest(method: .post, url: url, headers: [HTTPHeader("Content-Type", "application/json")], body: body,
                                  timeoutMillis: 30_000)
        return (try? await transport.send(request).status) ?? 0
    }

    /// Writes every body of the plan (`NN-v2-TYPE.json`, `NN-v1-K-TYPE.json`) and `lifecycle.json`, the expected
    /// events and final entitlements.
    static func write(_ plan: Lifecycle.Plan, lifecycle: Lifecycle, version: LifecycleOptions.Version, to folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        func put(_ name: String, _ bytes: [UInt8]) throws {
            guard FileManager.default.createFile(atPath: folder + "/" + name, contents: Data(bytes)) else {
                throw SimulatorError("out_unwritable", "cannot write \(folder)/\(name)")
            }
        }
        var steps: [JSONValue] = []
        for (index, e) in plan.emissions.enumerated() {
            let n = index + 1 < 10 ? "0\(index + 1)" : "\(index + 1)"
            var files: [JSONValue] = []
            if version != .v1, let payload = e.v2SignedPayload {
                let name = "\(n)-v2-\(e.v2Type ?? "")\(e.v2Subtype.map { "-" + $0 } ?? "").json"
                try put(name, InboundBody.v2(signedPayload: payload) + [UInt8(ascii: "\n")])
                files.append(.string(name))
            }
            if version != .v2 {
                for (k, body) in e.v1Bodies.enumerated() {
                    let name = "\(n)-v1-\(k + 1)-\(body.notificationType ?? "").json"
                    try put(name, Array(try JSONEncoder().encode(body)) + [UInt8(ascii: "\n")])
                    files.append(.string(name))
                }
            }
            steps.append(.object(JSONObject([
                ("step", .string(e.step)), ("at", .number(String(e.at))), ("original_transaction_id", .string(e.originalTransactionID)),
                ("files", .array(files)), ("expected_v2", e.expectedV2.map { .string($0.description) } ?? .null),
                ("expected_v1", .array(e.expectedV1.map { .string($0.description) })),
            ])))
        }
        let manifest: [(key: String, value: JSONValue)] = [
            ("lifecycle", .string(lifecycle.name)), ("summary", .string(lifecycle.summary)), ("end", .number(String(plan.end))),
            ("final_v2", .array(lifecycle.final.map { .string($0.rawValue) })),
            ("final_v1", .array((lifecycle.v1Final ?? lifecycle.final).map { .string($0.rawValue) })),
            ("v1_gap", lifecycle.v1Gap.map { .string($0) } ?? .null), ("steps", .array(steps)),
        ]
        try put("lifecycle.json", JSONValue.object(JSONObject(manifest)).canonicalBytes() + [UInt8(ascii: "\n")])
    }

    /// `simulate serve-apple`: the fake verifyReceipt and App Store Server API on `listen`, answering from the PKI
    /// folder's state, until SIGTERM / SIGINT. With `notifyURL`, test notifications are sent there.
    /// `rateLimit` (`--rate-limit`) is written to the state when given: `.some(nil)` clears it, nil keeps the state's.
    public static func serveApple(listen: String, pkiFolder: String, notifyURL: String?, rateLimit: SimWorld.APIRateLimit?? = nil,
                                  transport: any HTTPTransport) async -> Int32 {
        let pki: SimulatorPKI
        do {
            pki = try SimulatorPKI.load(folder: pkiFolder)
            if let rateLimit { try SimStateStore(folder: pki.folder).update { $0.apiRateLimit = rateLimit } }
        } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        var configuration = HTTPServer.Configuration()
        do { (configuration.host, configuration.port) = try ListenerSettings.address(listen, field: "--listen") } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        let fake = FakeAppleServer(pki: pki, notifyURL: notifyURL, transport: transport)
        let server = HTTPServer(configuration: configuration, handler: fake.handle)
        do { try server.start() } catch {
            FileHandleOutput.stderr("iap-gateway: cannot listen on \(listen): \(error)\n")
            return 2
        }
        FileHandleOutput.stderr(
            "iap-gateway: fake Apple on http://\(configuration.host):\(server.port) — /verifyReceipt, /sandbox/verifyReceipt, /inApps/..., /v1/apps... (Ctrl-C to stop)\n")
        await Signals.waitForTermination()
        server.stopAccepting()
        server.stop()
        return 0
    }
}

extension String {
    /// `0`s before the text up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
