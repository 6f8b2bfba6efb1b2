import Foundation
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

/// `iap-gateway subscription`, the built binary in a process of its own, on a store whose events of one subscription
/// are damaged (each a small frame that would expand to 60 MiB): its output stays small and names every damaged row.
@Suite struct SubscriptionCommandTests {
    @Test func theCommandOnADamagedSubscriptionPrintsASmallAnswerNamingTheDamagedRows() throws {
        #expect(FileManager.default.isExecutableFile(atPath: MultiInstanceProcessTests.binary), "swift build first")
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/gateway.db"
        let store = try SQLiteStore(path: path)
        let (damaged, intact) = try DamagedSubscription.make(in: store, path: path)
        store.close()
        try Data(
            """
            {
              "store": { "sqlite": "gateway.db" },
              "apps": [ { "bundle_id": "\(DamagedSubscription.bundleID)", "environments": ["sandbox"] } ]
            }
            """.utf8
        ).write(to: URL(filePath: folder + "/gateway.json"))

        // Standard output to a file: whatever the command prints, the test holds none of it in memory.
        let outputPath = folder + "/out.json"
        #expect(FileManager.default.createFile(atPath: outputPath, contents: nil))
        let output = try FileHandle(forWritingTo: URL(filePath: outputPath))
        let process = Process()
        process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
        process.arguments = [
            "subscription", "--config", folder + "/gateway.json", DamagedSubscription.originalTransactionID,
        ]
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try output.close()

        #expect(process.terminationStatus == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: outputPath)[.size] as? Int)
        #expect(size < 64 * 1_024, "\(size) bytes printed")
        guard size < 16 * 1_048_576 else { return }
        let answer = try #require(
            try JSONParser.parse(Array(try Data(contentsOf: URL(filePath: outputPath)))).objectValue
        )
        #expect(answer["complete"] == .bool(true) && answer["damaged"] == .number("31"))
        let events = answer["events"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(
            events.compactMap { $0["damaged"] == nil ? nil : $0["event_id"]?.stringValue } == damaged,
            "every damaged row named, in order"
        )
        #expect(events.allSatisfy { $0["damaged"] == nil || $0["damaged"] == .string("value_too_large") })
        #expect(events.compactMap { $0["event"]?.objectValue?["id"]?.stringValue } == intact)
    }
}
