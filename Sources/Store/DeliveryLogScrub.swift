public import WireJSON

/// The one-time cleanup of delivery attempts logged before answer heads were redacted (schema:
/// `delivery_attempts.redacted`): each head that could hold a secret (16 bytes or more, the rows of the partial index
/// `delivery_attempts_unredacted`) gets what logging one does today — ``DeliveryAttempt/redactedHead(_:_:)``: every
/// configured secret, then any webhook signature, replaced — and is marked, so it is looked at once. A batch of rows
/// per transaction, so that the log's size never shows in memory. Where a head changed, the store then erases its
/// freed space (``GatewayStore/eraseFreedSpace(of:)``), so the secret is not left in free pages or the log either
/// (docs/threat-model.md, "Secret disclosure").
/// What ``GatewayStore/scrubDeliveryLog(_:batch:)`` did.
public struct DeliveryLogScrubReport: Sendable, Equatable {
    /// Attempts looked at (every unredacted one whose head could hold a secret).
    public var examined = 0
    /// Attempts whose head held a secret or a signature.
    public var changed = 0
    public init(examined: Int = 0, changed: Int = 0) { (self.examined, self.changed) = (examined, changed) }
}

extension GatewayStore {
    /// Scrubs every unredacted attempt's head, `batch` rows at a time; blocking.
    @discardableResult
    public func scrubDeliveryLog(_ redactor: SecretRedactor, batch: Int = 256) throws -> DeliveryLogScrubReport {
        var report = DeliveryLogScrubReport()
        while true {
            let (examined, changed) = try write { tx -> (Int, Int) in
                let rows = try tx.unredactedAttemptHeads(limit: batch)
                var rewritten: [Int64: [UInt8]] = [:]
                for row in rows {
                    let head = DeliveryAttempt.redactedHead(row.head, redactor)
                    if head != row.head { rewritten[row.id] = head }
                }
                try tx.markAttemptHeadsRedacted(rows.map(\.id), rewritten: rewritten)
                return (rows.count, rewritten.count)
            }
            report.examined += examined
            report.changed += changed
            if examined < batch { break }
        }
        if report.changed > 0 { try eraseFreedSpace(of: .deliveryAttempts) }
        return report
    }
}
