internal import WireJSON

extension FakeApple {
    /// `GET /fake/api/stats`: what the fake's App Store Server API answered since it started (or since the last
    /// `DELETE /fake/api/stats`), per app, endpoint and environment: calls, 429s, and Apple's allowance
    /// (``AppleRateLimiter/stats(limits:)``), so that a run can check it stayed within Apple's rate limits.
    func statsControl(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        switch r.method {
        case "GET": break
        case "DELETE": appleLimiter.resetCounts()
        default: return Self.controlError(405, "GET or DELETE /fake/api/stats")
        }
        return FakeAppleResponse(
            status: 200,
            body: appleLimiter.stats(limits: try store.read().appleRateLimits).canonicalBytes()
        )
    }

    /// `GET /fake/api/apple-rate-limits`: the setting (`{"apple_rate_limits":"sandbox"}`); `POST …?set=production|
    /// sandbox|off|N` changes it (``AppleRateLimits/setting(_:)``, ``SimWorld/appleRateLimits``).
    func appleRateLimitsControl(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        switch r.method {
        case "GET": break
        case "POST":
            guard let text = r.value("set"), let setting = AppleRateLimits.setting(text) else {
                return Self.controlError(400, "set must be production, sandbox, off or a whole number per second")
            }
            try store.update { $0.appleRateLimits = setting }
        default:
            return Self.controlError(405, "GET or POST /fake/api/apple-rate-limits")
        }
        let setting = try store.read().appleRateLimits
        return FakeAppleResponse(
            status: 200,
            body: JSONValue.object(JSONObject([("apple_rate_limits", .string(setting?.description ?? "off"))]))
                .canonicalBytes()
        )
    }
}
