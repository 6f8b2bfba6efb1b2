import Canonical
import Foundation
import Gateway
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

/// `iap-gateway deliveries` and `replay --downstream`, the built binary in a process of its own, on a store holding
/// one event delivered to two downstreams.
@Suite struct DeliveriesCommandTests {
    static let config = """
        {
          "store": { "sqlite": "gateway.db" },
          "apps": [ { "bundle_id": "com.example.gateway", "environments": ["sandbox"], "authority": "v2",
                      "downstreams": ["main", "shadow"] } ],
          "downstreams": [
            { "name": "main", "url": "http://127.0.0.1:1/events", "environments": ["sandbox"] },
            { "name": "shadow", "url": "http://127.0.0.1:1/shadow", "environments": ["sandbox"], "shadow": true }
          ]
        }
        """

    /// A folder with the config and a store holding event `e1`, each of its deliveries attempted once.
    static func folder() throws -> String {
        let folder = try Scratch.directory()
        try Data(config.utf8).write(to: URL(filePath: folder + "/gateway.json"))
        let gateway = try GatewayConfig.parse(Array(config.utf8), baseDirectory: folder)
        let store = try SQLiteStore(path: folder + "/gateway.db")
        defer { store.close() }
        var event = CanonicalEvent(
            id: "e1",
            source: .v2,
            kind: .renewal,
            rawType: "DID_RENEW",
            eventDate: 1_000,
            eventDateSource: .signedDate,
            verified: true
        )
        (event.bundleID, event.environment, event.originalTransactionID) = ("com.example.gateway", .sandbox, "otid-1")
        let (routing, events) = (Router(config: gateway).routing, [event])
        let authority = [
            AuthorityEntry(bundleID: "com.example.gateway", environment: .sandbox, authority: .v2, origin: .config)
        ]
        _ = try store.write { tx in
            _ = try tx.seedAuthority(authority, now: 1)
            return try tx.storeEvents(events, journalID: nil, routing: routing, now: 5, authority: .v2)
        }
        for d in try store.deliveries() {
            let outcome = DeliveryOutcome(
                state: .delivered,
                attempts: 1,
                nextAttemptAt: 0,
                deliveredAt: 9,
                status: 200,
                error: nil,
                attempt: DeliveryAttempt(
                    startedAt: 6,
                    latencyMillis: 3,
                    responseHead: Array("<ok/>".utf8),
                    redactor: SecretRedactor([])
                )
            )
            try store.write { tx in try tx.settleDelivery(id: d.id, outcome) }
        }
        return folder
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try ReceiptPathEndToEndTests.command(arguments, environment: ["PATH": "/usr/bin:/bin"])
    }

    @Test func anEventsDeliveriesAreOneJSONObjectAnUnknownOneAnErrorWithStatus1() throws {
        #expect(FileManager.default.isExecutableFile(atPath: MultiInstanceProcessTests.binary), "swift build first")
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/gateway.json"

        let found = try Self.run(["deliveries", "--config", config, "e1"])
        #expect(found.status == 0, "\(found.stderr)")
        let answer = try #require(try JSONParser.parse(Array(found.stdout.utf8)).objectValue)
        #expect(answer["event_id"] == .string("e1"))
        let deliveries = answer["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(deliveries.compactMap { $0["downstream"]?.stringValue } == ["main", "shadow"])
        let attempt = deliveries.first?["attempt_log"]?.arrayValue?.first?.objectValue
        #expect(attempt?["status"] == .number("200") && attempt?["response_head"] == .string("<ok/>"))
        #expect(found.stdout.hasSuffix("}\n") && found.stdout.filter { $0 == "\n" }.count == 1)

        let unknown = try Self.run(["deliveries", "--config", config, "nope"])
        #expect(unknown.status == 1)
        let error = try JSONParser.parse(Array(unknown.stdout.utf8)).objectValue?["error"]?.objectValue
        #expect(error?["code"] == .string("not_found"))

        let usage = try Self.run(["deliveries", "--config", config])
        #expect(usage.status == 2 && usage.stderr == "iap-gateway: deliveries needs an EVENT_ID\n")
        let help = try Self.run(["deliveries", "--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("  iap-gateway deliveries --config FILE EVENT_ID"))
    }

    @Test func replayToOneDownstreamReArmsItAloneAnUnknownOneIsAUsageError() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/gateway.json"

        let unknown = try Self.run(["replay", "--config", config, "--id", "e1", "--downstream", "nowhere"])
        #expect(unknown.status == 2 && unknown.stderr.contains("no downstream named nowhere"), "\(unknown.stderr)")
        let misplaced = try Self.run(["replay", "--config", config, "--dead-letters", "--downstream", "main"])
        #expect(misplaced.status == 2 && misplaced.stderr.contains("--downstream goes with --id"))

        let replayed = try Self.run(["replay", "--config", config, "--id", "e1", "--downstream", "main"])
        #expect(replayed.status == 0 && replayed.stdout == "{\"requeued\":1}\n", "\(replayed.stderr)")
        let store = try SQLiteStore(path: folder + "/gateway.db")
        defer { store.close() }
        let states = Dictionary(uniqueKeysWithValues: try store.deliveries().map { ($0.downstream, $0.state) })
        #expect(states == ["main": .pending, "shadow": .delivered])
    }
}
