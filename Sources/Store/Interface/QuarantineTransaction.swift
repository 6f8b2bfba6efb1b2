/// The quarantine: refused bodies by lane, within caps, and their replay. One slice of ``StoreTransaction``.
public protocol QuarantineTransaction {
    /// Adds a row to its lane within `cap`; the check, any eviction and the insert are one step. `once`: not when the
    /// lane already holds a row with the same body, code and claimed bundle (``QuarantineOutcome/held(id:)``) — for
    /// what Apple's notification history lists again on every run that covers it. Part of the same step, so two
    /// instances quarantining the same body at once store one row.
    func quarantine(_ record: QuarantineRecord, cap: QuarantineCap, once: Bool) throws -> QuarantineOutcome
    /// Quarantined rows, oldest first: of one lane, or one row, or all.
    func quarantined(lane: QuarantineRecord.Lane?, id: Int64?, limit: Int) throws -> [QuarantineRecord]
    /// Each lane's rows and bytes.
    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)]
    func removeQuarantined(id: Int64) throws
    /// Marks a row as being replayed now (committed before the replay runs).
    func beginReplay(id: Int64, now: Int64) throws
    /// Records a replay that did not journal the row: the row stays, with its outcome.
    func finishReplay(id: Int64, code: String, now: Int64) throws
    /// Up to `limit` rows stored before quarantined bodies were redacted, oldest first.
    func unredactedQuarantine(limit: Int) throws -> [QuarantineRecord]
    /// Stores a row's scrubbed body and text (`record.id` names it; its size is counted again) and marks it redacted.
    func rewriteQuarantined(_ record: QuarantineRecord) throws
}
