internal import Gateway
internal import ServiceKit
internal import Store
internal import Threads
internal import WireJSON

/// `iap-gateway migrate-store`: move an installation's SQLite store into an empty PostgreSQL database, nothing lost
/// (docs/operations.md, "Moving from SQLite to PostgreSQL"). The copy itself is `StoreMigration` in the Store module.
enum MigrateStoreCommand: Command {
    static let name = "migrate-store"
    static let usage = """
          iap-gateway migrate-store (--config FILE | --from sqlite:PATH) --to-postgres-env VAR
              Copy the SQLite store (--from, else the config's store.sqlite) into the empty PostgreSQL database whose
              connection string is in the environment variable VAR, in one transaction: ids, order and pending work
              kept, claims empty. Prints rows per table and whether both sides count the same. Stop the gateway first;
              a target that already holds gateway data is refused.
        """

    struct Summary: Encodable {
        struct Table: Encodable {
            var rows: Int64
            var copied: Int64
            var verified: Bool
        }
        var from: String
        var to: String
        var tables: [String: Table]
        var quarantineUsage: [String: Bool]
        var sequences: [String: Int64]
        var milliseconds: Int64
        var verified: Bool

        enum CodingKeys: String, CodingKey {
            case from, to, tables
            case quarantineUsage = "quarantine_usage"
            case sequences, milliseconds, verified
        }
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "from", "to-postgres-env"])
        _ = try a.positionals(atMost: 0, for: name)
        guard let variable = a.value("to-postgres-env") else {
            throw CommandError.usage(
                "migrate-store needs --to-postgres-env VAR (the variable holding the connection string)"
            )
        }
        // The name of a variable, never the connection string itself (it holds a password: not echoed).
        guard isVariableName(variable) else {
            throw CommandError.usage(
                "--to-postgres-env takes the name of an environment variable holding the connection string, not the string"
            )
        }
        let path = try sourcePath(a)
        // With a config, its secrets are scrubbed from quarantine rows stored before bodies were redacted; the value of
        // any `password` member is dropped in any case.
        let redactor =
            a.value("config") == nil
            ? SecretRedactor([]) : try a.config(for: name).secretRedactor(environment: ProcessEnvironment.variables)
        guard let url = ProcessEnvironment.variables[variable], !url.isEmpty else {
            throw CommandError.usage("migrate-store: environment variable \(variable) is not set")
        }
        let report: StoreMigration.Report
        do {
            report = try await Blocking.run {
                try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: url, redactor: redactor)
            }
        } catch let refusal as StoreMigration.Refusal {
            throw CommandError.failure("migrate-store: \(refusal.message)")
        }
        let summary = Summary(
            from: "sqlite:" + path,
            to: "postgres (\(variable))",
            tables: Dictionary(
                uniqueKeysWithValues: report.tables.map {
                    ($0.table, Summary.Table(rows: $0.source, copied: $0.target, verified: $0.verified))
                }
            ),
            quarantineUsage: ["verified": report.quarantineUsageVerified],
            sequences: report.sequences,
            milliseconds: report.milliseconds,
            verified: report.verified
        )
        print(JSONOutput.string(summary))
        guard report.verified else {
            throw CommandError.failure("migrate-store: the row counts differ after the copy (see the summary)")
        }
        return 0
    }

    /// `--from sqlite:PATH` (relative to the working directory), else the config's `store.sqlite`.
    static func sourcePath(_ a: Arguments) throws(CommandError) -> String {
        if let from = a.value("from") {
            guard from.hasPrefix("sqlite:"), from.count > "sqlite:".count else {
                throw .usage("--from takes sqlite:PATH")
            }
            return String(from.dropFirst("sqlite:".count))
        }
        guard a.value("config") != nil else { throw .usage("migrate-store needs --config FILE or --from sqlite:PATH") }
        let config = try a.config(for: name)
        guard config.postgresURLEnv == nil else {
            throw .usage(
                "the config's store is PostgreSQL already (store.postgres): give the SQLite file with --from sqlite:PATH"
            )
        }
        return config.sqlitePath
    }

    static func isVariableName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return s.unicodeScalars.allSatisfy {
            $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
        }
    }
}
