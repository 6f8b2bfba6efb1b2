import Canonical
import Foundation
import Policy
import Postgres
import TestSupport
import Testing

@testable import Store

/// The implementations the contract runs against: SQLite always, PostgreSQL when a server is given
/// (`scripts/with-postgres swift test`, which sets `IAPGW_TEST_DATABASE_URL`).
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    static var available: [StoreKind] { TestDatabase.url == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }
}

/// The test server, when there is one.
typealias TestDatabase = TestPostgresServer

/// Every downstream takes every event: authoritative ones to "main", the rest to "shadow"; V1 bodies to "legacy".
/// The store tests' routing: for each of their apps, in both environments, an authoritative event goes to `main`
/// and `shadow`, the other path's to `shadow`, a notification's body to `legacy`; every app has a V1 path; those in
/// `compared` are compared.
enum TestRouting {
    static let bundles = ["com.example.gateway", "com.example.a", "com.example.other", "com.example.unknown"]

    static func routing(compared: Set<String> = []) -> Routing {
        let both: Set<AppStoreEnvironment> = [.production, .sandbox]
        return Routing(
            downstreams: [
                Routing.Downstream(name: "main", kind: .webhook, environments: both, shadow: false),
                Routing.Downstream(name: "shadow", kind: .webhook, environments: both, shadow: true),
                Routing.Downstream(name: "legacy", kind: .v1Passthrough, environments: both, shadow: false),
            ],
            apps: bundles.map {
                Routing.App(bundleID: $0, downstreams: [], compares: compared.contains($0), hasV1Path: true)
            }
        )
    }
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
