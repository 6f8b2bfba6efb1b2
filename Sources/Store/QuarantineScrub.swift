public import WireJSON

/// The one-time cleanup of quarantine rows stored before quarantined bodies were redacted (schema: `redacted`): each
/// such row gets what a refusal stores today — every configured secret replaced in its body, message and claims, the
/// value of any `password` member dropped — and is marked, so it is looked at once. Where a row changed, the store then
/// erases its freed space (``GatewayStore/eraseFreedSpace(of:)``), so the secret is not left in free pages or the log
/// either (docs/threat-model.md, "Secret disclosure").
/// What ``GatewayStore/scrubQuarantine(_:batch:)`` did.
public struct QuarantineScrubReport: Sendable, Equatable {
    /// Rows looked at (every unredacted row).
    public var examined = 0
    /// Rows whose body or text held a secret or a password.
    public var changed = 0
    public init(examined: Int = 0, changed: Int = 0) { (self.examined, self.changed) = (examined, changed) }
}

extension GatewayStore {
    /// Scrubs every unredacted row, in batches; blocking. Rows are only ever made smaller, so the lanes' usage only
    /// falls.
    @discardableResult
    public func scrubQuarantine(_ redactor: SecretRedactor, batch: Int = 64) throws -> QuarantineScrubReport {
        var report = QuarantineScrubReport()
        while true {
            let (examined, changed) = try write { tx -> (Int, Int) in
                let rows = try tx.unredactedQuarantine(limit: batch)
                var changed = 0
                for row in rows {
                    let scrubbed = Self.scrubbed(row, redactor)
                    if scrubbed.body != row.body || scrubbed.message != row.message || scrubbed.bundleID != row.bundleID
                        || scrubbed.environment != row.environment
                    {
                        changed += 1
                    }
                    try tx.rewriteQuarantined(scrubbed)
                }
                return (rows.count, changed)
            }
            report.examined += examined
            report.changed += changed
            if examined < batch { break }
        }
        if report.changed > 0 { try eraseFreedSpace(of: .quarantine) }
        return report
    }

    static func scrubbed(_ row: QuarantineRecord, _ redactor: SecretRedactor) -> QuarantineRecord {
        var r = row
        r.body = SecretRedactor.redactingPasswordValues(redactor.redact(row.body))
        r.message = redactor.redact(row.message)
        r.bundleID = row.bundleID.map(redactor.redact)
        r.environment = row.environment.map(redactor.redact)
        return r
    }
}
