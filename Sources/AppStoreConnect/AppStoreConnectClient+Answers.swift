internal import HTTPClient
internal import WireJSON

extension AppStoreConnectClient {
    /// The longest `Retry-After` read: a day (Apple's limits are hourly). A longer or absurd value reads as this.
    public static let retryAfterCeilingMillis: Int64 = 86_400_000
    /// How much of Apple's own words (its JSON:API `errors[]`) a reason keeps.
    public static let appleTextLimit = 300

    /// What a non-2xx answer means. `token` is the bearer token sent, removed from Apple's words should they ever
    /// repeat it; `now` (ms) dates a `Retry-After` given as an HTTP-date.
    static func judge(_ response: HTTPResponse, token: String, now: Int64) -> AppStoreConnectError {
        let status = response.status
        let errors = (try? JSONValueDecoder().decode(ErrorResponse.self, from: response.body))?.errors ?? []
        let said = apple(errors, token: token)
        let codes = errors.compactMap(\.code).map { Clip.printable($0, 80) }
        let retryAfter = response.retryAfterMillis(maximumMillis: retryAfterCeilingMillis, now: now)
        func error(_ code: AppStoreConnectError.Code, _ words: String) -> AppStoreConnectError {
            AppStoreConnectError(
                code,
                words + " (HTTP \(status))" + said,
                httpStatus: status,
                appleCodes: codes,
                retryAfterMillis: retryAfter
            )
        }
        switch status {
        case 401:
            return error(
                .unauthorized,
                "App Store Connect refused the API token: the key id, issuer id or private key is wrong, the key was revoked, "
                    + "or the clock is off; it must be a team API key (App Store Connect API), not the In-App Purchase key"
            )
        case 403:
            return error(
                .forbidden,
                "the App Store Connect API key may not do this: modifying an app needs a key with the App Manager or Admin role"
            )
        case 404:
            return error(.notFound, "App Store Connect does not know it")
        case 409:
            return error(.conflict, "App Store Connect refused the change")
        case 429:
            var words = "App Store Connect's rate limit for this key is spent"
            if let limit = response.header("X-Rate-Limit") { words += " (X-Rate-Limit: \(Clip.printable(limit, 100)))" }
            if let retryAfter { words += "; Apple asked to wait \(retryAfter / 1000) s" }
            return error(.rateLimited, words)
        case 500...599:
            return error(.unavailable, "App Store Connect failed")
        case 400...499:
            return error(.badRequest, "App Store Connect refused the request")
        default:
            return error(.malformed, "App Store Connect answered an unexpected status")
        }
    }

    /// No answer at all.
    static func judge(_ error: HTTPClientError) -> AppStoreConnectError {
        switch error.code {
        case .responseTooLarge:
            return AppStoreConnectError(.malformed, "App Store Connect's answer is larger than allowed")
        case .invalidURL:
            return AppStoreConnectError(.unavailable, "the configured App Store Connect URL is unusable")
        default:
            return AppStoreConnectError(.unavailable, "App Store Connect is unreachable (\(error.code))")
        }
    }

    /// Apple's JSON:API errors as `; Apple: 409 ENTITY_ERROR.ATTRIBUTE.INVALID: title - detail; …`, printable ASCII,
    /// at most ``appleTextLimit`` bytes; empty when the answer had none. The token is cut out first, in case a
    /// server between us and Apple echoes the request.
    static func apple(_ errors: [ErrorResponse.Item], token: String) -> String {
        guard !errors.isEmpty else { return "" }
        let items = errors.map { e in
            var head = [e.status, e.code].compactMap { $0 }.joined(separator: " ")
            let words = [e.title, e.detail].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " - ")
            if !words.isEmpty { head += head.isEmpty ? words : ": " + words }
            return head
        }
        var text = items.joined(separator: "; ")
        let signature = token.split(separator: ".").last.map(String.init) ?? token
        for secret in [token, signature] where !secret.isEmpty {
            text = text.replacing(secret, with: "<token>")
        }
        return "; Apple: " + Clip.printable(text, appleTextLimit)
    }
}
