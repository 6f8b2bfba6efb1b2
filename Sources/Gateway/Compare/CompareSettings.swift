internal import Canonical
public import ReportModel
package import ServiceKit

/// `compare` (docs/configuration.md): the comparison's timing, its fetches in flight and the readiness rule.
public struct CompareSettings: Sendable, Hashable {
    /// Snapshots observed further apart than this are not compared as they are: the older side is fetched again.
    public var toleranceMillis: Int64 = 10 * 60_000
    /// How long the other path may take to see a subscription before it counts as one-sided.
    public var graceMillis: Int64 = 3_600_000
    /// A disagreement is recorded only once it survives fetching the older side again, this long after the newer
    /// observation (the subscription may have changed between the two observations).
    public var confirmDelayMillis: Int64 = 30_000
    /// Fetches (verifyReceipt, App Store Server API) in flight at once for comparisons and v2-api events.
    public var concurrency = 2
    public var rule = ReadinessRule()

    public init() {}
}

extension CompareSettings: ConfigSection {
    package static let key = "compare"
    package static let members: [(path: String, members: Set<String>)] = [
        (
            "",
            [
                "tolerance", "grace", "confirm_delay", "concurrency", "min_pairs", "min_agreement_rate", "window",
                "allow_one_sided",
            ]
        )
    ]

    /// `compare`: the comparison's timing and the readiness rule.
    package static func parse(_ compare: ConfigReader) throws(ConfigError) -> CompareSettings {
        var c = CompareSettings()
        func duration(_ key: String, _ current: Int64) throws(ConfigError) -> Int64 {
            try compare.duration(key, current, example: "10m or 7d")
        }
        c.toleranceMillis = try duration("tolerance", c.toleranceMillis)
        c.graceMillis = try duration("grace", c.graceMillis)
        c.confirmDelayMillis = try duration("confirm_delay", c.confirmDelayMillis)
        c.rule.windowMillis = try duration("window", c.rule.windowMillis)
        c.concurrency = try compare.int("concurrency", 1...64, c.concurrency)
        if let n = try compare.int64("min_pairs") {
            guard n >= 1 else { throw ConfigError(field: compare.field("min_pairs"), "must be at least 1") }
            c.rule.minimumPairs = Int(n)
        }
        if let v = compare.object["min_agreement_rate"], !v.isNull {
            guard case .number(let text) = v, let rate = Double(text), rate > 0, rate <= 1 else {
                throw ConfigError(
                    field: compare.field("min_agreement_rate"),
                    "must be a number in (0, 1], such as 0.995"
                )
            }
            c.rule.minimumAgreementRate = rate
        }
        c.rule.allowOneSided = try compare.bool("allow_one_sided") ?? false
        return c
    }
}
