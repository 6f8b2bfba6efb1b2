import Canonical
import Foundation
import Postgres
@testable import Store
import Testing
import TestSupport

/// The implementations the contract runs against: SQLite always, PostgreSQL when a server is given
/// (`scripts/with-postgres swift test`, which sets `IAPGW_TEST_DATABASE_URL`).
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    static var available: [StoreKind] { TestDatabase.url == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }
}

/// The test server, when there is one.
enum TestDatabase {
    static let url = TestPostgresServer.url
    static let ctl = TestPostgresServer.ctl

    /// `url` with `search_path` set to `schema` for every session (libpq's `options`), in URI or key=value form.
    static func url(_ url: String, searchPath schema: String) -> String {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
        }
        return url + " options='-csearch_path=\(schema)'"
    }

    static func control(_ argument: String) throws -> Int32 { try TestPostgresServer.control(argument) }
}

/// A schema of its own in the test database (`t_<random>`), with a connection string whose sessions use it; dropped
/// when the last reference goes. Tests are independent of each other and of their order.
final class TestSchema: Sendable {
    let name: String
    let url: String

    init() throws {
        let server = try #require(TestDatabase.url)
        name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        url = TestDatabase.url(server, searchPath: name)
        let c = try PostgresConnection(server, label: "test setup")
        defer { c.close() }
        try c.execute("CREATE SCHEMA \(name)")  // an identifier we made, never a value
    }

    /// A session of its own on the schema, for looking at what the store did.
    func connect() throws -> PostgresConnection { try PostgresConnection(url, label: "test") }

    deinit {
        guard let server = TestDatabase.url, let c = try? PostgresConnection(server, label: "test cleanup") else { return }
        try? c.execute("DROP SCHEMA IF EXISTS \(name) CASCADE")
        c.close()
    }
}

/// Every downstream takes every event: authoritative ones to "main", the rest to "shadow"; V1 bodies to "legacy".
struct TestRouting: DeliveryRouting {
    var compared: Set<String> = []
    func eventTargets(bundleID: String?, environment: AppStoreEnvironment?, authoritative: Bool) -> [String] {
        authoritative ? ["main", "shadow"] : ["shadow"]
    }
    func passthroughTargets(bundleID: String?, environment: AppStoreEnvironment?) -> [String] { ["legacy"] }
    func compares(_ bundleID: String?) -> Bool { bundleID.map(compared.contains) ?? false }
}

/// A fresh store of one kind — SQLite in a scratch folder, PostgreSQL in a schema of its own — with
/// `com.example.gateway` authoritative on V2 in both environments.
final class Fixture: Sendable {
    let store: any GatewayStore
    let kind: StoreKind
    private let directory: String?
    /// PostgreSQL: the schema, for a second instance on it or a look at its rows.
    let schema: TestSchema?

    init(_ kind: StoreKind) throws {
        self.kind = kind
        switch kind {
        case .sqlite:
            let directory = try Scratch.directory()
            (self.directory, schema) = (directory, nil)
            store = try SQLiteStore(path: directory + "/store.db")
        case .postgres:
            let schema = try TestSchema()
            (directory, self.schema) = (nil, schema)
            store = try PostgresStore(url: schema.url)
        }
        let wanted = [AppStoreEnvironment.production, .sandbox].map {
            AuthorityEntry(bundleID: "com.example.gateway", environment: $0, authority: .v2, origin: .config)
        }
        _ = try store.write { tx in try tx.seedAuthority(wanted, now: 1) }
    }

    deinit {
        store.close()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Claims jobs as the gateway does: in a write transaction where instances share the store, else in a read.
    func claim<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T {
        store.sharedByInstances ? try store.write(body) : try store.read(body)
    }
}

/// Polls `condition` until it holds or `timeout` passes; true when it held. For waiting on a condition (a server
/// back up, a session waiting on a lock), never for a fixed time.
func eventually(timeout: Duration = .seconds(60), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}
