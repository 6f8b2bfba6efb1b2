public import Canonical

/// One quarantined body.
public struct QuarantineRecord: Sendable {
    public enum Lane: String, Sendable, Hashable, CaseIterable { case untrusted, genuine }
    public var id: Int64 = 0
    public var lane: Lane
    public var receivedAt: Int64
    public var version: Generation?
    public var code: String
    public var message: String
    public var bundleID: String?
    public var environment: String?
    public var passwordFingerprint: String?
    public var body: [UInt8]
    /// Replays tried, when the last one ran and what it answered (nil: never replayed).
    public var replayAttempts = 0
    public var lastReplayAt: Int64?
    public var lastReplayCode: String?
    /// Set while a replay of this row runs; still set afterwards only if that replay never finished.
    public var replayStartedAt: Int64?

    /// The bytes the row counts against its lane's cap: what it takes on disk, conservatively — the body and the text
    /// stored beside it plus a fixed overhead for the row, rounded up to whole 4 KiB pages of which SQLite uses 4,092
    /// bytes each for a large value's overflow chain.
    public var storedSize: Int64 {
        let content = Int64(
            256 + body.count + message.utf8.count + code.utf8.count + (bundleID?.utf8.count ?? 0)
                + (environment?.utf8.count ?? 0)
        )
        return (content + 4_091) / 4_092 * 4_096
    }

    public init(
        lane: Lane,
        receivedAt: Int64,
        version: Generation?,
        code: String,
        message: String,
        bundleID: String? = nil,
        environment: String? = nil,
        passwordFingerprint: String? = nil,
        body: [UInt8]
    ) {
        self.lane = lane
        self.receivedAt = receivedAt
        self.version = version
        self.code = code
        self.message = message
        self.bundleID = bundleID
        self.environment = environment
        self.passwordFingerprint = passwordFingerprint
        self.body = body
    }
}

/// What storing a quarantined body did.
public enum QuarantineOutcome: Sendable, Equatable {
    /// Stored; `evicted` older rows of the same lane were dropped to make room.
    case stored(id: Int64, evicted: Int)
    /// Not stored again: the lane already holds this body (row `id`), and the caller asked for it `once`.
    case held(id: Int64)
    /// Not stored: the lane is full and does not evict (the genuine lane), or the row alone exceeds the lane.
    case full
}

/// A lane's bounds. The untrusted lane drops its oldest rows to make room; the genuine lane never drops a
/// genuine notification to make room for another and refuses instead (docs/operations.md).
public struct QuarantineCap: Sendable, Equatable {
    public var rows: Int
    public var bytes: Int64
    public var evictsOldest: Bool
    public init(rows: Int, bytes: Int64, evictsOldest: Bool) {
        (self.rows, self.bytes, self.evictsOldest) = (rows, bytes, evictsOldest)
    }
}
