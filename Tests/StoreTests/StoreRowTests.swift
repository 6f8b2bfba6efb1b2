import Canonical
import Postgres
import Rows
import SQLite
import Testing

@testable import Store

/// The store's typed rows decoded from rows as each database gives them: a well-formed row decodes as it always did,
/// a row with a missing or mistyped column throws `RowError` naming it instead of decoding as "" or 0.
@Suite struct StoreRowTests {
    /// One cell, as either database reads it.
    enum Cell {
        case null
        case int(Int64)
        case text(String)
        var sqlite: SQLiteValue {
            switch self {
            case .null: .null
            case .int(let v): .integer(v)
            case .text(let v): .text(v)
            }
        }
        var postgres: PostgresValue {
            switch self {
            case .null: .null
            case .int(let v): .int64(v)
            case .text(let v): .text(v)
            }
        }
    }

    /// A journal row of `SQL.journalEntries`' columns.
    static let journal: [(String, Cell)] = [
        ("id", .int(7)), ("notification_key", .text("key-1")), ("version", .text("v2")), ("received_at", .int(1_000)),
        ("origin", .text("live")), ("bundle_id", .text("com.example.gateway")), ("environment", .text("sandbox")),
        ("secret_name", .null), ("authority", .null), ("body", .null),
    ]

    /// `cells` decoded as a journal entry from an SQLite row and from a PostgreSQL row.
    static func decode(_ cells: [(String, Cell)]) -> [Result<JournalEntry, any Error>] {
        let names = cells.map(\.0)
        return [
            Result { try JournalEntry(row: SQLiteRow(columns: names, values: cells.map(\.1.sqlite))) },
            Result { try JournalEntry(row: PostgresRow(columns: names, values: cells.map(\.1.postgres))) },
        ]
    }

    static func rowError(_ result: Result<JournalEntry, any Error>) -> RowError? {
        guard case .failure(let error) = result else { return nil }
        return error as? RowError
    }

    @Test func aWellFormedRowDecodesWithItsNullsAsNil() throws {
        for result in Self.decode(Self.journal) {
            let entry = try result.get()
            #expect(entry.id == 7)
            #expect(entry.key == "key-1")
            #expect(entry.version == .v2)
            #expect(entry.receivedAt == 1_000)
            #expect(entry.origin == .live)
            #expect(entry.bundleID == "com.example.gateway")
            #expect(entry.environment == .sandbox)
            #expect(entry.secretName == nil)
            #expect(entry.authority == nil)
            #expect(entry.body == nil)
        }
    }

    @Test func aMissingColumnThrowsNamingIt() {
        for missing in ["notification_key", "received_at", "bundle_id", "body"] {
            for result in Self.decode(Self.journal.filter { $0.0 != missing }) {
                let error = Self.rowError(result)
                #expect(error?.code == .missingColumn, "\(missing)")
                #expect(error?.column == missing)
            }
        }
    }

    @Test func aMistypedColumnThrowsNamingIt() {
        for (column, cell) in [
            ("received_at", Cell.text("1000")), ("notification_key", .int(1)), ("authority", .int(2)),
        ] {
            let cells = Self.journal.map { $0.0 == column ? (column, cell) : $0 }
            for result in Self.decode(cells) {
                let error = Self.rowError(result)
                #expect(error?.code == .wrongType, "\(column)")
                #expect(error?.column == column)
            }
        }
    }

    @Test func nullOrAnUnknownValueInANotNullColumnThrows() {
        for (column, cell, code) in [
            ("version", Cell.null, RowError.Code.nullValue), ("version", .text("v3"), .unknownValue),
            ("origin", .text("somewhere"), .unknownValue),
        ] {
            let cells = Self.journal.map { $0.0 == column ? (column, cell) : $0 }
            for result in Self.decode(cells) {
                let error = Self.rowError(result)
                #expect(error?.code == code, "\(column)")
                #expect(error?.column == column)
            }
        }
    }
}
