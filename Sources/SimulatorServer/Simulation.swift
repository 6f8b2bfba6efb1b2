internal import Canonical
internal import FoundationEssentials
internal import Gateway
public import HTTPClient
public import Simulator
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// Plays the simulated App Store's lifecycles against a gateway (`simulate lifecycle`, and the end-to-end tests): each
/// step's V2 and/or V1 bodies POSTed to a URL and/or written to a folder, the simulated state kept in the PKI folder
/// for the fake Apple endpoints to answer from, lossy traffic by a ``DropPlan``, and with `--version apple` the
/// version the fake App Store Connect says Apple sends, asked step by step.
public enum Simulation {
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
        /// How long Apple waits (real time, ms) for the consumption information of a refund request once its
        /// CONSUMPTION_REQUEST is sent to `to`, polling the state for it (``SimStateStore/consumptionInfo(transactionID:)``);
        /// then it decides alone (a refund). 0: it does not wait.
        public var consumptionWaitMillis: Int64 = Simulation.defaultConsumptionWaitMillis
        public init(name: String, to: String?, pkiFolder: String, bundleID: String, sharedSecret: String) {
            (self.name, self.to, self.pkiFolder, self.bundleID, self.sharedSecret) = (
                name, to, pkiFolder, bundleID, sharedSecret
            )
        }
    }

    /// What a lifecycle run did: one line per step.
    public struct StepReport: Sendable {
        public var line: String
        public var ok: Bool
    }

    /// How long a refund request waits for consumption information by default: long enough for a gateway that answers
    /// at once, short enough that playing every lifecycle against one that does not stays quick.
    public static let defaultConsumptionWaitMillis: Int64 = 2_000

    /// The simulated month when running as fast as possible: long enough that grace periods and trials span
    /// distinct seconds, short enough that a whole story fits in the 10-day freshness window many times over.
    public static let fastMonthMillis: Int64 = 3_600_000

    /// `simulate lifecycle`: plays the lifecycle, keeps the simulated App Store's state in the PKI folder (the
    /// fake endpoints answer from it), and sends each step's V2 and/or V1 bodies to `to` and/or writes them to
    /// `out`. `beforeStep` runs before a step is sent and `afterStep` once it is (tests set the gateway's clock to
    /// the step's time there, and wait for its deliveries).
    public static func lifecycle(
        _ o: LifecycleOptions,
        transport: any HTTPTransport,
        now: @Sendable () -> Int64,
        sleep: @Sendable (Int64) async -> Void,
        output: (String) -> Void,
        beforeStep: (Emission) async throws -> Void = { _ in },
        afterStep: (Emission) async throws -> Void = { _ in }
    ) async throws -> LifecycleRun {
        guard let lifecycle = Lifecycles.named(o.name) else {
            throw SimulatorError("unknown_lifecycle", "no lifecycle \(o.name): `iap-gateway simulate list` names them")
        }
        guard o.to != nil || o.out != nil else {
            throw SimulatorError("usage", "lifecycle needs --to URL or --out FOLDER")
        }
        if o.version == .apple, o.apple == nil || o.to == nil {
            throw SimulatorError("usage", "--version apple needs --to URL and --apple URL (a simulate serve-apple)")
        }
        let pki = try SimulatorPKI.load(folder: o.pkiFolder)
        let store = SimStateStore(folder: o.pkiFolder)
        let emitter = Emitter(pki: pki)
        // Reserve a block of ids so runs sharing the folder never reuse one.
        let firstID = try store.update { world -> Int64 in
            defer { world.nextID = world.nextID.clampedAdding(10_000) }  // a state file is input too
            return world.nextID
        }
        var plan: Lifecycle.Plan
        let paced = o.secondsPerMonth != nil
        if let seconds = o.secondsPerMonth {
            plan = try lifecycle.plan(
                bundleID: o.bundleID,
                sharedSecret: o.sharedSecret,
                emitter: emitter,
                start: now(),
                monthMillis: Int64(min(max(1, seconds * 1000), Double(Lifecycle.maxMonthMillis + 1))),
                firstID: firstID
            )
        } else {
            plan = try lifecycle.planEndingAt(
                now(),
                bundleID: o.bundleID,
                sharedSecret: o.sharedSecret,
                emitter: emitter,
                monthMillis: fastMonthMillis,
                firstID: firstID
            )
        }
        // The folder gets every body: which version Apple sends is decided step by step, for `to` only.
        if let out = o.out {
            try write(plan, lifecycle: lifecycle, version: o.version == .apple ? .both : o.version, to: out)
        }
        var allOK = true
        var dropped: [DroppedStep] = []
        var index = 0
        while index < plan.emissions.count {
            let e = plan.emissions[index]
            defer { index += 1 }
            var sentAny = false
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
                    world.notifications.append(
                        SimSentNotification(
                            notificationUUID: uuid,
                            bundleID: o.bundleID,
                            signedDate: e.at,
                            notificationType: e.v2Type ?? "",
                            subtype: e.v2Subtype,
                            originalTransactionID: e.originalTransactionID,
                            signedPayload: payload
                        )
                    )
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
                    ("type", e.v2Type.map { .string($0) } ?? .null),
                    ("subtype", e.v2Subtype.map { .string($0) } ?? .null),
                    ("expected", e.expectedV2.map { .string($0.description) } ?? .null),
                ]
                if let payload = e.v2SignedPayload, let url = o.to {
                    let result: String
                    if let drop {
                        v2.append(("dropped", .string(drop.rawValue)))
                        withheld?.v2 = DroppedStep.V2(
                            notificationUUID: e.v2NotificationUUID,
                            type: e.v2Type,
                            subtype: e.v2Subtype
                        )
                        result = drop.sendAttemptResult
                    } else {
                        let status = await send(InboundBody.v2(signedPayload: payload), to: url, transport: transport)
                        sentAny = true
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
                        sentAny = true
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
            // A refund request reached the gateway: Apple waits for its consumption information, then decides; an
            // answer other than the one planned (none) replays the story with it, the same up to here.
            if e.awaitsConsumptionInfo != nil, sentAny {
                let outcome = try await lifecycle.awaitRefundAnswer(
                    after: index,
                    of: plan,
                    store: store,
                    waitMillis: o.consumptionWaitMillis
                )
                plan = outcome.plan
                output(consumptionLine(lifecycle.name, step: index + 1, outcome))
            }
        }
        if o.drop != nil, o.to != nil { output(droppedSummary(lifecycle.name, dropped)) }
        return LifecycleRun(lifecycle: lifecycle, plan: plan, ok: allOK, dropped: dropped)
    }

    /// The line after a refund request's wait: what Apple received (`consumption_info`, null: nothing) and decided.
    static func consumptionLine(_ lifecycle: String, step: Int, _ outcome: RefundRequestOutcome) -> String {
        let received: JSONValue =
            outcome.info.map {
                .object(
                    JSONObject([
                        ("delivery_status", .string($0.deliveryStatus)),
                        ("refund_preference", $0.refundPreference.map { .string($0) } ?? .null),
                        ("count", .number(String($0.count))),
                    ])
                )
            } ?? .null
        let members: [(key: String, value: JSONValue)] = [
            ("lifecycle", .string(lifecycle)), ("step", .number(String(step))),
            ("transaction_id", .string(outcome.transactionID)), ("consumption_info", received),
            ("waited_ms", .number(String(outcome.waitedMillis))), ("decision", .string(outcome.decision)),
        ]
        return String(decoding: JSONValue.object(JSONObject(members)).canonicalBytes(), as: UTF8.self)
    }

    /// A played lifecycle: what was planned, whether every send got a 2xx, and what the drop plan withheld.
    public struct LifecycleRun: Sendable {
        public var lifecycle: Lifecycle
        /// The story as played: after a refund request, with Apple's decision (``Lifecycle/Plan/finalStates`` is where
        /// it left each subscription).
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
            var item: [(key: String, value: JSONValue)] = [
                ("step", .number(String(d.step))), ("name", .string(d.name)),
                ("reason", .string(d.reason.rawValue)),
            ]
            if let v2 = d.v2 {
                item.append(
                    (
                        "v2",
                        .object(
                            JSONObject([
                                ("notification_uuid", v2.notificationUUID.map { .string($0) } ?? .null),
                                ("type", v2.type.map { .string($0) } ?? .null),
                                ("subtype", v2.subtype.map { .string($0) } ?? .null),
                            ])
                        )
                    )
                )
            }
            item.append(("v1", .array(d.v1.map { .string($0) })))
            return .object(JSONObject(item))
        }
        let summary: [(key: String, value: JSONValue)] = [
            ("lifecycle", .string(lifecycle)),
            (
                "dropped",
                .object(
                    JSONObject([
                        ("steps", .number(String(dropped.count))),
                        ("notifications", .number(String(dropped.reduce(0) { $0 + $1.count }))),
                        ("items", .array(items)),
                    ])
                )
            ),
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
            let plain =
                (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D
                || b == 0x2E
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
            throw SimulatorError(
                "apple_unreachable",
                "the fake Apple at \(base) answered HTTP \(response.status), not its App Store Connect state"
            )
        }
        return version
    }

    /// POSTs one body; the HTTP status, or 0 when nothing answered.
    static func send(_ body: [UInt8], to url: String, transport: any HTTPTransport) async -> Int {
        let request = HTTPRequest(
            method: .post,
            url: url,
            headers: [HTTPHeader("Content-Type", "application/json")],
            body: body,
            timeoutMillis: 30_000
        )
        return (try? await transport.send(request).status) ?? 0
    }

    /// Writes every body of the plan (`NN-v2-TYPE.json`, `NN-v1-K-TYPE.json`) and `lifecycle.json`, the expected
    /// events and final entitlements.
    static func write(
        _ plan: Lifecycle.Plan,
        lifecycle: Lifecycle,
        version: LifecycleOptions.Version,
        to folder: String
    ) throws {
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
            steps.append(
                .object(
                    JSONObject([
                        ("step", .string(e.step)), ("at", .number(String(e.at))),
                        ("original_transaction_id", .string(e.originalTransactionID)),
                        ("files", .array(files)),
                        ("expected_v2", e.expectedV2.map { .string($0.description) } ?? .null),
                        ("expected_v1", .array(e.expectedV1.map { .string($0.description) })),
                    ])
                )
            )
        }
        let manifest: [(key: String, value: JSONValue)] = [
            ("lifecycle", .string(lifecycle.name)), ("summary", .string(lifecycle.summary)),
            ("end", .number(String(plan.end))),
            ("final_v2", .array(lifecycle.final.map { .string($0.rawValue) })),
            ("final_v1", .array((lifecycle.v1Final ?? lifecycle.final).map { .string($0.rawValue) })),
            ("v1_gap", lifecycle.v1Gap.map { .string($0) } ?? .null), ("steps", .array(steps)),
        ]
        try put("lifecycle.json", JSONValue.object(JSONObject(manifest)).canonicalBytes() + [UInt8(ascii: "\n")])
    }
}

extension String {
    /// `0`s before the text up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
