package import Canonical
public import ServiceKit
public import V2Adapter
internal import WireJSON

/// An app's `consumption` (docs/configuration.md): whether Apple's refund requests (CONSUMPTION_REQUEST) are
/// answered, how the team's service is asked, the answer when it does not answer, and the deadline
/// (docs/operations.md, "Refund requests").
public struct ConsumptionSettings: Sendable, Hashable, ConfigSection {
    /// `respond`: answer the app's refund requests.
    public var respond = false
    /// `ask_url`: the team's service, asked for each request's answer (a signed POST); nil: the default alone.
    public var askURL: String?
    /// `ask_secret_env`: the variables holding the ask's signing secrets (Standard Webhooks, `whsec_`).
    public var askSecretEnv: [String] = []
    /// `ask_timeout`: how long one ask waits for the team's answer.
    public var askTimeoutMillis: Int64 = 10_000
    /// `ask_for`: how long after Apple's signed date the team's service is asked again after a failed ask; then
    /// the default is used.
    public var askForMillis: Int64 = 3_600_000
    /// `default`: the answer when the team's service gives none in time; nil: nothing is sent then. Its
    /// `customerConsented: true` is the app's assertion of consent for every customer the team's service does not
    /// answer for (docs/configuration.md).
    public var defaultAnswer: ConsumptionInformation?
    /// `deadline`: after Apple's signed date, no answer is sent (Apple asks for one within 12 hours).
    public var deadlineMillis: Int64 = 11 * 3_600_000
    /// `retry_delay`, `max_retry_delay`: the wait after a failed ask or send, doubling up to the maximum.
    public var retryDelayMillis: Int64 = 30_000
    public var maxRetryDelayMillis: Int64 = 30 * 60_000

    public init() {}

    /// An answer of the team's service, as the responder reads it before Apple's rules for the purchase's product
    /// (nil: refused). For the fuzz target: the reader takes bytes from outside.
    public static func answer(fromTeam bytes: [UInt8]) -> ConsumptionInformation? {
        try? ConsumptionAnswer.read(bytes)
    }

    /// Whether an answer of the team's service says, readably, that the customer did not consent: final, whatever
    /// else it holds (docs/operations.md, "Refund requests"). For the fuzz target.
    public static func refusesConsent(fromTeam bytes: [UInt8]) -> Bool { ConsumptionAnswer.refusesConsent(bytes) }

    /// The default as sent for a purchase of `productType`: an auto-renewable subscription's without the percentage
    /// (Apple takes none; it prorates a subscription by the time elapsed), the preference kept.
    package func defaultAnswer(for productType: ProductType?) -> ConsumptionInformation? {
        guard var answer = defaultAnswer else { return nil }
        if productType == .autoRenewable { answer.consumptionPercentage = nil }
        return answer
    }

    /// The answer as it is kept on the job and sent to Apple (JSON in Apple's member names).
    public static func encoded(_ answer: ConsumptionInformation) -> [UInt8] { JSONOutput.encode(answer) }

    /// Apple's limit: the answer must reach Apple within 12 hours of the request.
    package static let appleLimitMillis: Int64 = 12 * 3_600_000

    package static let key = "apps[].consumption"
    package static var members: [(path: String, members: Set<String>)] {
        [("", keys), ("default", ConsumptionAnswer.members)]
    }

    package static let keys: Set<String> = [
        "respond", "ask_url", "ask_secret_env", "ask_timeout", "ask_for", "default", "deadline", "retry_delay",
        "max_retry_delay",
    ]

    package static func parse(_ r: ConfigReader) throws(ConfigError) -> ConsumptionSettings {
        var s = ConsumptionSettings()
        s.respond = try r.bool("respond") ?? false
        if let url = try r.string("ask_url") {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw ConfigError(field: r.field("ask_url"), "must be an http(s) URL")
            }
            s.askURL = url
        }
        s.askSecretEnv = try r.strings("ask_secret_env") ?? []
        if s.askURL != nil, s.askSecretEnv.isEmpty {
            throw ConfigError(field: r.field("ask_secret_env"), "is required with ask_url: every ask is signed")
        }
        s.askTimeoutMillis = try r.duration("ask_timeout", s.askTimeoutMillis, example: "10s")
        guard (100...120_000).contains(s.askTimeoutMillis) else {
            throw ConfigError(field: r.field("ask_timeout"), "must be 100ms…2m")
        }
        s.deadlineMillis = try r.duration("deadline", s.deadlineMillis, example: "11h")
        guard s.deadlineMillis <= appleLimitMillis else {
            throw ConfigError(field: r.field("deadline"), "must be at most 12h: Apple takes no answer after that")
        }
        s.askForMillis = try r.duration("ask_for", min(s.askForMillis, s.deadlineMillis / 2), example: "1h")
        guard s.askForMillis < s.deadlineMillis else {
            throw ConfigError(
                field: r.field("ask_for"),
                "must be shorter than deadline: the default needs time to be sent"
            )
        }
        s.retryDelayMillis = try r.duration("retry_delay", s.retryDelayMillis, example: "30s")
        s.maxRetryDelayMillis = try r.duration("max_retry_delay", s.maxRetryDelayMillis, example: "30m")
        guard s.retryDelayMillis <= s.maxRetryDelayMillis else {
            throw ConfigError(field: r.field("retry_delay"), "must not be longer than max_retry_delay")
        }
        if let d = try r.object("default") {
            if ConsumptionAnswer.refusesConsent(d.object) {
                throw ConfigError(
                    field: d.field("customerConsented"),
                    "must be true: an answer without the customer's consent is never sent (leave default out instead)"
                )
            }
            do throws(ConsumptionAnswer.Refusal) { s.defaultAnswer = try ConsumptionAnswer.read(d.object) } catch {
                throw ConfigError(field: d.path, "is not an answer Apple takes: \(error.detail) (\(error.code))")
            }
            // The default answers every product of the app: Apple must take it for a subscription (sent without its
            // percentage) and for the other products (sent as it is).
            for product in [nil, ProductType.autoRenewable] {
                guard let answer = s.defaultAnswer(for: product) else { continue }
                do throws(ConsumptionAnswer.Refusal) { try ConsumptionAnswer.check(answer, for: product) } catch {
                    throw defaultRefusal(error, d)
                }
            }
        }
        if s.respond, s.askURL == nil, s.defaultAnswer == nil {
            throw ConfigError(field: r.field("respond"), "needs ask_url or default: otherwise nothing is ever sent")
        }
        return s
    }

    /// The start-up error for a default Apple would refuse, on the member to change.
    package static func defaultRefusal(_ refusal: ConsumptionAnswer.Refusal, _ d: ConfigReader) -> ConfigError {
        switch refusal.code {
        case ConsumptionInformation.Problem.percentageOutOfRange.rawValue:
            ConfigError(field: d.field("consumptionPercentage"), "must be 0…100000 (milliunits of a percent)")
        case ConsumptionInformation.Problem.percentageWithoutDelivery.rawValue:
            ConfigError(
                field: d.field("consumptionPercentage"),
                "must be 0 unless deliveryStatus is DELIVERED: a purchase not delivered was not consumed"
            )
        case ConsumptionInformation.Problem.proratedWithoutPercentage.rawValue:
            ConfigError(
                field: d.field("refundPreference"),
                "GRANT_PRORATED needs consumptionPercentage above 0: the default answers the app's purchases other "
                    + "than auto-renewable subscriptions too (a subscription's goes without it: Apple prorates it)"
            )
        default:
            ConfigError(field: d.path, "is not an answer Apple takes: \(refusal.detail) (\(refusal.code))")
        }
    }
}
