internal import Foundation

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
}
