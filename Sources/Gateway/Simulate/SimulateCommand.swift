public import HTTPServer
internal import Canonical
internal import Crypto
internal import FoundationEssentials
public import HTTPClient
public import Simulator
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// `iap-gateway simulate`: the simulated App Store (DESIGN ch. 7) — its PKI, its lifecycles sent to a gateway (or
/// written to a folder) and its fake Apple endpoints.
public enum SimulateCommand {
    /// `simulate pki --out DIR`: creates the PKI and API key once (later runs keep them). Prints what to configure.
    public static func pki(out folder: String, now: Int64) throws -> String {
        let pki = try SimulatorPKI.loadOrCreate(folder: folder, now: now)
        let line: [(key: String, value: JSONValue)] = [
            ("root", .string(pki.folder + "/root.der")), ("api_key", .string(pki.folder + "/api-key.p8")),
            ("key_id", .string(SimulatorPKI.apiKeyID)), ("issuer_id", .string(SimulatorPKI.issuerID)),
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
        public enum Version: String, Sendable { case v1, v2, both }
        public var name: String
        public var to: String?
        public var pkiFolder: String
        public var bundleID: String
        public var sharedSecret: String
        public var version: Version = .both
        /// Seconds per simulated month, sleeping between steps; nil: as fast as possible, dates in the recent past.
        public var secondsPerMonth: Double?
        public var out: String?
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
        if let out = o.out { try write(plan, lifecycle: lifecycle, version: o.version, to: out) }
        var allOK = true
        for (index, e) in plan.emissions.enumerated() {
            if paced {
                let wait = e.at - now()
                if wait > 0 { await sleep(wait) }
            }
            try await beforeStep(e)
            try store.update { world in
                world.subscriptions[e.originalTransactionID] = e.subscription
                if let payload = e.v2SignedPayload, let uuid = e.v2NotificationUUID, o.version != .v1 {
                    world.notifications.append(SimSentNotification(
                        notificationUUID: uuid, bundleID: o.bundleID, signedDate: e.at, notificationType: e.v2Type ?? "", subtype: e.v2Subtype,
                        originalTransactionID: e.originalTransactionID, signedPayload: payload))
                }
            }
            var members: [(key: String, value: JSONValue)] = [
                ("lifecycle", .string(lifecycle.name)), ("step", .number(String(index + 1))), ("name", .string(e.step)),
                ("at", .number(String(e.at))), ("original_transaction_id", .string(e.originalTransactionID)),
            ]
            var stepOK = true
            if o.version != .v1 {
                var v2: [(key: String, value: JSONValue)] = [
                    ("type", e.v2Type.map { .string($0) } ?? .null), ("subtype", e.v2Subtype.map { .string($0) } ?? .null),
                    ("expected", e.expectedV2.map { .string($0.description) } ?? .null),
                ]
                if let payload = e.v2SignedPayload, let url = o.to {
                    let status = await send(InboundBody.v2(signedPayload: payload), to: url, transport: transport)
                    let ok = (200..<300).contains(status)
                    stepOK = stepOK && ok
                    v2.append(("status", .number(String(status))))
                    if let uuid = e.v2NotificationUUID {
                        let attempt = SendAttempt(attemptDate: now(), sendAttemptResult: ok ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE")
                        try store.update { world in
                            if let i = world.notifications.lastIndex(where: { $0.notificationUUID == uuid }) {
                                world.notifications[i].sendAttempts.append(attempt)
                            }
                        }
                    }
                }
                members.append(("v2", .object(JSONObject(v2))))
            }
            if o.version != .v2 {
                var v1: [JSONValue] = []
                for (i, body) in e.v1Bodies.enumerated() {
                    var item: [(key: String, value: JSONValue)] = [
                        ("type", .string(body.notificationType ?? "")),
                        ("expected", i < e.expectedV1.count ? .string(e.expectedV1[i].description) : .null),
                    ]
                    if let url = o.to {
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
            try await afterStep(e)
        }
        return LifecycleRun(lifecycle: lifecycle, plan: plan, ok: allOK)
    }

    /// A played lifecycle: what was planned and whether every send got a 2xx.
    public struct LifecycleRun: Sendable {
        public var lifecycle: Lifecycle
        public var plan: Lifecycle.Plan
        public var ok: Bool
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
    public static func serveApple(listen: String, pkiFolder: String, notifyURL: String?, transport: any HTTPTransport) async -> Int32 {
        let pki: SimulatorPKI
        do { pki = try SimulatorPKI.load(folder: pkiFolder) } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        var configuration = HTTPServer.Configuration()
        do { (configuration.host, configuration.port) = try GatewayService.address(listen, field: "--listen") } catch {
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
            "iap-gateway: fake Apple on http://\(configuration.host):\(server.port) — /verifyReceipt, /sandbox/verifyReceipt, /inApps/... (Ctrl-C to stop)\n")
        await ServeCommand.waitForTermination()
        server.stopAccepting()
        server.stop()
        return 0
    }
}

/// The fake Apple behind an ``HTTPServer`` handler: request in, ``FakeApple`` answer out, one log line per request.
public final class FakeAppleServer: Sendable {
    let fake: FakeApple

    /// `now` is the fake's clock (tests pass the story's clock so bearer tokens and answers share one time).
    public init(pki folder: String, notifyURL: String?, transport: any HTTPTransport,
                now: @escaping @Sendable () -> Int64 = WallClock.wallMillis) throws {
        self.fake = Self.make(try SimulatorPKI.load(folder: folder), notifyURL: notifyURL, transport: transport, now: now)
    }

    init(pki: SimulatorPKI, notifyURL: String?, transport: any HTTPTransport) {
        self.fake = Self.make(pki, notifyURL: notifyURL, transport: transport, now: WallClock.wallMillis)
    }

    private static func make(_ pki: SimulatorPKI, notifyURL: String?, transport: any HTTPTransport, now: @escaping @Sendable () -> Int64)
        -> FakeApple
    {
        let store = SimStateStore(folder: pki.folder)
        return FakeApple(pki: pki, now: now, deliverTest: notifyURL.map { url in
            { @Sendable token, payload in
                Task {
                    let status = await SimulateCommand.send(InboundBody.v2(signedPayload: payload), to: url, transport: transport)
                    let result = (200..<300).contains(status) ? "SUCCESS" : status == 0 ? "NO_RESPONSE" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                    try? store.recordTestAttempt(token: token, result: result, at: WallClock.wallMillis())
                }
            }
        })
    }

    public func handle(_ request: ServerRequest) -> ServerResponse {
        let r = fake.handle(FakeAppleRequest(
            method: request.method, path: request.path, query: request.query, authorization: request.header("authorization"), body: request.body))
        return r.body.isEmpty ? ServerResponse(status: r.status) : .json(r.status, r.body)
    }

}
