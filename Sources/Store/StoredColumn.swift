/// The columns that hold a large value — a notification's body or JSON the gateway made — each with the most bytes a
/// value of it may hold, plain (docs/architecture.md, "Capped values"). Both stores refuse to write a value over its
/// column's cap (``StoreValueTooLarge``), and a value read over it — a damaged or hostile file or row — reads as
/// damaged (``StoredValueDamage/tooLarge``) without its bytes being made: a compressed value stops decompressing at the
/// cap, and PostgreSQL's reads of one subscription leave it in the database (``Dialect/capped(_:as:_:)``).
public enum StoredColumn: Sendable, Hashable, CaseIterable {
    /// `journal.body`: a notification as it arrived (a V1 body with its password replaced by the secret's name).
    case body
    /// `events.json`.
    case event
    /// `subscription_state.json`.
    case state
    /// `snapshots.json`, `compare_ledger.v1_json` and `v2_json`, `receipt_ledger.v1_json` and `v2_json`.
    case snapshot
    /// `receipt_histories.json`: a customer's whole history as the App Store Server API gave it.
    case receiptHistory

    /// A body is at most 1 MiB at the endpoint (`InboundBody.maxBytes`; every body the gateway journals, live,
    /// replayed or from Apple's history, goes through that check); a V1 body is stored with its password replaced by
    /// `"iapgw-secret:NAME"`, NAME the secret's variable: 64 KiB more leaves room for any variable name.
    public static let maxBodyBytes = 1_048_576 + 65_536

    /// The gateway's own JSON — an event, a subscription's state, an outcome snapshot — is about a kilobyte (the
    /// largest the fixtures make, Apple's and the synthetic ones, is 1,176 bytes): 256 KiB is two hundred times that.
    /// A state and a snapshot hold a few of their event's fields, so an event within its cap never makes one over
    /// theirs.
    public static let maxJSONBytes = 262_144

    /// A customer's history holds every transaction Get Transaction History returned, about 700 bytes each: 8 MiB is
    /// some 12,000 transactions, more than a customer buying something every day for thirty years.
    public static let maxReceiptHistoryBytes = 8 * 1_048_576

    /// The most bytes a value of this column holds, plain.
    public var maxPlainBytes: Int {
        switch self {
        case .body: Self.maxBodyBytes
        case .event, .state, .snapshot: Self.maxJSONBytes
        case .receiptHistory: Self.maxReceiptHistoryBytes
        }
    }

    /// The column's name in messages: `journal.body`, `events.json`, ….
    public var name: String {
        switch self {
        case .body: "journal.body"
        case .event: "events.json"
        case .state: "subscription_state.json"
        case .snapshot: "snapshots.json"
        case .receiptHistory: "receipt_histories.json"
        }
    }

    /// `value`, when it is within the cap; ``StoreValueTooLarge`` otherwise: the store never writes a value it
    /// would read back as damaged.
    func checked(_ value: [UInt8]) throws(StoreValueTooLarge) -> [UInt8] {
        guard value.count <= maxPlainBytes else {
            throw StoreValueTooLarge(column: self, bytes: value.count)
        }
        return value
    }
}

/// Why a stored value reads as damaged: stable codes, shown where an answer lists the row (`subscription`).
public enum StoredValueDamage: String, Sendable, Hashable, CaseIterable {
    /// Larger than its column's cap (``StoredColumn/maxPlainBytes``), compressed or plain.
    case tooLarge = "value_too_large"
    /// Compressed, and does not decompress: corrupt, truncated, or naming a dictionary the store does not have.
    case corrupt = "value_corrupt"
    /// Read whole, but not the JSON its row holds.
    case unreadable = "value_unreadable"
}

/// A stored value as a read finds it.
enum StoredRead: Sendable, Hashable {
    /// SQL NULL.
    case missing
    /// The plain bytes.
    case value([UInt8])
    case damaged(StoredValueDamage)

    var bytes: [UInt8]? {
        guard case .value(let bytes) = self else { return nil }
        return bytes
    }
}

/// A value the store refuses to write: larger than its column's cap (``StoredColumn/maxPlainBytes``). Thrown by the
/// write; nothing of its transaction is stored. The description names the column and the sizes, never the bytes.
public struct StoreValueTooLarge: Error, Hashable, CustomStringConvertible, Sendable {
    /// The stable code, as a value read over a cap is damaged with (``StoredValueDamage/tooLarge``).
    public static let code = StoredValueDamage.tooLarge.rawValue

    public let column: StoredColumn
    public let bytes: Int

    public var description: String {
        "\(Self.code): a \(column.name) value of \(bytes) bytes (the store keeps at most \(column.maxPlainBytes))"
    }
}
