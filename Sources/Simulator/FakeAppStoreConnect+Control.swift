internal import AppStoreConnect
internal import Canonical
internal import WireJSON

extension FakeAppStoreConnect {
    /// The control endpoints (`/fake/asc/…`, the table in ``FakeAppStoreConnect``): what a test or a script does to
    /// a `simulate serve-apple` process from outside. A bad parameter is answered `400 {"error": "…"}`.
    func control(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        do {
            switch (r.method, r.path) {
            case ("GET", "/fake/asc/state"):
                let (bundle, env) = try Self.app(r)
                return Self.answer(try state(bundleID: bundle, environment: env))
            case ("POST", "/fake/asc/notification"):
                let (bundle, env) = try Self.app(r)
                let sent = try sendNotification(bundleID: bundle, environment: env)
                return Self.answer(try state(bundleID: bundle, environment: env), sent: sent.version)
            case ("POST", "/fake/asc/version"):
                let (bundle, env) = try Self.app(r)
                guard let text = r.value("version"), text == "V1" || text == "V2" else {
                    throw ControlError("version must be V1 or V2")
                }
                try setVersion(
                    NotificationVersion(rawValue: text),
                    bundleID: bundle,
                    environment: env,
                    immediately: try Self.flag(r, "immediately")
                )
                return Self.answer(try state(bundleID: bundle, environment: env))
            case ("POST", "/fake/asc/url"):
                let (bundle, env) = try Self.app(r)
                if let url = r.value("url"), !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                    throw ControlError("url must be an http:// or https:// URL")
                }
                try setURL(r.value("url"), bundleID: bundle, environment: env)
                return Self.answer(try state(bundleID: bundle, environment: env))
            case ("POST", "/fake/asc/apps"):
                guard let bundle = r.value("bundle_id"), !bundle.isEmpty else {
                    throw ControlError("bundle_id is required")
                }
                try registerApp(bundleID: bundle)
                return Self.object([
                    ("app_id", .string(SimConnectApp.id(bundleID: bundle))), ("bundle_id", .string(bundle)),
                ])
            case ("POST", "/fake/asc/failures"):
                guard let status = r.value("status").flatMap(Int.init), (400...599).contains(status) else {
                    throw ControlError("status must be an HTTP status from 400 to 599")
                }
                let retryAfter = try Self.number(r, "retry_after", 0...86_400)
                let count = try Self.number(r, "count", 0...1000) ?? 1
                try failNext(
                    status: status,
                    retryAfterSeconds: retryAfter,
                    count: count,
                    applied: try Self.flag(r, "applied"),
                    method: try Self.method(r)
                )
                return Self.object([("queued", .number(String(try store.read().appStoreConnect.failures.count)))])
            case ("POST", "/fake/asc/delay"):
                let millis = try Self.number(r, "ms", 0...600_000) ?? 0
                try setDelay(millis: millis)
                return Self.object([("delay_ms", .number(String(millis)))])
            case ("DELETE", "/fake/asc/failures"):
                try clearFailures()
                return Self.object([("queued", .number("0"))])
            case ("POST", "/fake/asc/lag"):
                let n = try Self.number(r, "notifications", 0...1_000_000) ?? 0
                let mode = r.value("mode") ?? "late"
                guard mode == "late" || mode == "mixed" else { throw ControlError("mode must be late or mixed") }
                try setLag(SimConnectLag(notifications: n, mixed: mode == "mixed"))
                return Self.object([("notifications", .number(String(n))), ("mode", .string(mode))])
            default:
                return FakeAppleResponse(status: 404, body: Self.errorBody("no control endpoint \(r.method) \(r.path)"))
            }
        } catch let e as ControlError {
            return FakeAppleResponse(status: 400, body: Self.errorBody(e.message))
        } catch let e as SimulatorError {
            return FakeAppleResponse(status: 400, body: Self.errorBody(e.reason))
        }
    }

    struct ControlError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// `bundle_id` and `environment` (`production` or `sandbox`).
    static func app(_ r: FakeAppleRequest) throws(ControlError) -> (String, AppStoreEnvironment) {
        guard let bundle = r.value("bundle_id"), !bundle.isEmpty else { throw ControlError("bundle_id is required") }
        guard let text = r.value("environment"), text == "production" || text == "sandbox" else {
            throw ControlError("environment must be production or sandbox")
        }
        return (bundle, AppStoreEnvironment(rawValue: text))
    }

    static func number(_ r: FakeAppleRequest, _ name: String, _ range: ClosedRange<Int>) throws(ControlError) -> Int? {
        guard let text = r.value(name) else { return nil }
        guard let n = Int(text), range.contains(n) else {
            throw ControlError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// `method`: `GET` or `PATCH`, or absent.
    static func method(_ r: FakeAppleRequest) throws(ControlError) -> String? {
        guard let method = r.value("method") else { return nil }
        guard method == "GET" || method == "PATCH" else { throw ControlError("method must be GET or PATCH") }
        return method
    }

    static func flag(_ r: FakeAppleRequest, _ name: String) throws(ControlError) -> Bool {
        switch r.value(name) {
        case nil, "false": false
        case "true": true
        default: throw ControlError("\(name) must be true or false")
        }
    }

    /// The state as the control endpoints answer it.
    static func answer(_ s: State, sent: NotificationVersion? = nil) -> FakeAppleResponse {
        var members: [(key: String, value: JSONValue)] = [
            ("app_id", .string(s.appID)), ("bundle_id", .string(s.bundleID)),
            ("environment", .string(s.environment.rawValue)),
            ("version", .string(s.version.rawValue)), ("effective_version", .string(s.effectiveVersion.rawValue)),
            ("url", s.url.map { .string($0) } ?? .null),
            ("pending_notifications", .number(String(s.pendingNotifications))),
        ]
        if let sent { members.append(("sent_version", .string(sent.rawValue))) }
        return object(members)
    }

    static func object(_ members: [(key: String, value: JSONValue)]) -> FakeAppleResponse {
        FakeAppleResponse(status: 200, body: JSONValue.object(JSONObject(members)).canonicalBytes())
    }

    static func errorBody(_ message: String) -> [UInt8] {
        JSONValue.object(JSONObject([("error", .string(message))])).canonicalBytes()
    }
}
