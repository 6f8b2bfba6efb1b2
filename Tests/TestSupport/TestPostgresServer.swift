internal import Foundation
public import Postgres

/// The PostgreSQL server tests run against, when there is one: `scripts/with-postgres swift test …` starts a
/// throw-away cluster and sets these variables. Without them the PostgreSQL tests are skipped.
public enum TestPostgresServer {
    /// `IAPGW_TEST_DATABASE_URL`: a libpq connection string.
    public static let url: String? = variable("IAPGW_TEST_DATABASE_URL")
    /// `IAPGW_TEST_PG_CTL`: a command that can `stop`, `start` or `restart` the server.
    public static let ctl: String? = variable("IAPGW_TEST_PG_CTL")

    private static func variable(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// Runs `IAPGW_TEST_PG_CTL ARGUMENT` to completion; its exit status.
    public static func control(_ argument: String) throws -> Int32 {
        guard let ctl else { return -1 }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ctl)
        process.arguments = [argument]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// `url` with `search_path` set to `schema` for every session (libpq's `options`), in URI or key=value form.
    public static func url(_ url: String, searchPath schema: String) -> String {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
        }
        return url + " options='-csearch_path=\(schema)'"
    }
}

/// A schema of its own in the test database (`t_<random>`), with a connection string whose sessions use it; dropped
/// when the last reference goes. Tests are independent of each other and of their order.
public final class TestSchema: Sendable {
    public let name: String
    public let url: String

    public struct NoServer: Error {}

    public init() throws {
        guard let server = TestPostgresServer.url else { throw NoServer() }
        name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        url = TestPostgresServer.url(server, searchPath: name)
        let c = try PostgresConnection(server, label: "test setup")
        defer { c.close() }
        try c.execute("CREATE SCHEMA \(name)")  // an identifier we made, never a value
    }

    /// A session of its own on the schema, for looking at what the store did.
    public func connect() throws -> PostgresConnection { try PostgresConnection(url, label: "test") }

    deinit {
        guard let server = TestPostgresServer.url, let c = try? PostgresConnection(server, label: "test cleanup") else {
            return
        }
        try? c.execute("DROP SCHEMA IF EXISTS \(name) CASCADE")
        c.close()
    }
}
