import Foundation
import Store
import TestSupport
import Testing
import WireJSON

/// `iap-gateway migrate-store`, the built binary in a process of its own, from a fresh SQLite store into an empty
/// PostgreSQL schema: it exits 0 and prints the one JSON line scripts read (schemas/migrate-store.schema.json).
@Suite(
    .enabled(if: TestPostgresServer.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)")
)
struct MigrateStoreCommandTests {
    @Test func aStoreIsCopiedAndTheSummaryLineSaysSo() throws {
        #expect(FileManager.default.isExecutableFile(atPath: MultiInstanceProcessTests.binary), "swift build first")
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/gateway.db"
        try SQLiteStore(path: path).close()
        let schema = try TestSchema()

        let process = Process()
        process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
        process.arguments = ["migrate-store", "--from", "sqlite:" + path, "--to-postgres-env", "IAPGW_TARGET_URL"]
        process.environment = ["PATH": "/usr/bin:/bin", "IAPGW_TARGET_URL": schema.url]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = Array(out.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        ContractSamples.recordLines("migrate-store", output)

        let lines = output.split(separator: 0x0A)
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        let summary = try #require(try JSONParser.parse(Array(line)).objectValue)
        #expect(summary["verified"] == .bool(true))
        #expect(summary["from"] == .string("sqlite:" + path))
        #expect(summary["to"] == .string("postgres (IAPGW_TARGET_URL)"))
        #expect(!String(decoding: output, as: UTF8.self).contains(schema.url), "the connection string is never printed")
        let tables = try #require(summary["tables"]?.objectValue)
        #expect(tables.keys.contains("journal") && tables.keys.contains("events"))
    }
}
