import Foundation
import HTTPClient
import Store
import TestSupport
import Testing
import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// The real executable against inputs that used to kill it with a signal: a V2 body whose (unverified) payload dates
/// are at the ends of `Int64`. `verify` must report an error and exit 1; `serve` must quarantine it, replay it on
/// request, record the failure and keep serving.
@Suite(.serialized) struct PoisonInputProcessTests {
    static let extremes = ["-9223372036854775808", "9223372036854775807", "-1", "-9223372036854775807"]

    /// A TEST notification for the test app at `signedDate`, with a bogus signature (another key signed it).
    static func poison(_ signedDate: String, uuid: String = "poison") throws -> [UInt8] {
        try QuarantineReplayTests.v2Body(
            payload: QuarantineReplayTests.testPayload(
                bundle: "com.example.gateway",
                signedDate: signedDate,
                uuid: uuid
            ),
            bogusSignature: true
        )
    }

    /// Runs the executable to completion; returns its exit status (128 + signal when a signal ended it) and stdout.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(filePath: CrashRecoveryTests.binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let status =
            process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }

    @Test func verifyReportsExtremeDatesAsErrorsInsteadOfDying() throws {
        let dir = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var files: [String] = []
        for (i, date) in Self.extremes.enumerated() {
            let path = dir + "/poison-\(i).json"
            try Data(try Self.poison(date)).write(to: URL(filePath: path))
            files.append(path)
        }
        let result = try Self.run(["verify", "--root", Fixtures.url("test-pki/root.der").path()] + files)
        #expect(result.status == 1, "verify ended with status \(result.status) (128+ is a signal)")
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == files.count)
        for line in lines {
            let object = try #require(try JSONParser.parse(Array(line.utf8)).objectValue)
            #expect(object["ok"] == .bool(false))
            #expect(object["error"]?.objectValue?["code"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func serveQuarantinesAndReplaysThemAndKeepsServing() async throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary),
            "build the package first (swift build)"
        )
        let dir = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configPath = dir + "/config.json"
        try Data(
            """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "ADMIN_TOKEN" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["\(Fixtures.url("test-pki/root.der").path())"] },
              "apps": [ { "bundle_id": "com.example.gateway", "app_apple_id": 1234567890, "environments": ["sandbox"],
                          "authority": "v2", "downstreams": [] } ]
            }
            """.utf8
        ).write(to: URL(filePath: configPath))
        let child = try CrashRecoveryTests.launch(
            config: configPath,
            environment: ["PATH": "/usr/bin:/bin", "ADMIN_TOKEN": "t"]
        )
        defer {
            kill(child.process.processIdentifier, SIGKILL)
            child.process.waitUntilExit()
        }
        let transport = CurlTransport()
        let base = "http://127.0.0.1:\(child.port)"
        var liveCodes: [String] = []
        for (i, date) in Self.extremes.enumerated() {
            let r = try await transport.send(
                HTTPRequest(method: .post, url: base + "/notifications", body: try Self.poison(date, uuid: "p\(i)"))
            )
            #expect(r.status == 403)
            liveCodes.append(
                try JSONParser.parse(r.body).objectValue?["error"]?.objectValue?["code"]?.stringValue ?? ""
            )
        }
        // The admin port is in the same "listening" line; the CLI replay runs in its own process against the same store.
        let replay = try Self.run(["quarantine", "--config", configPath, "replay"])
        #expect(replay.status == 0, "quarantine replay ended with status \(replay.status)")
        let results = try #require(try JSONParser.parse(Array(replay.output.utf8)).arrayValue)
        #expect(results.count == Self.extremes.count)
        // Each is refused on replay as it was live.
        #expect(results.map { $0.objectValue?["code"]?.stringValue ?? "" } == liveCodes)
        // Still serving, and the rows are still there with their outcome.
        let health = try await transport.send(HTTPRequest(method: .get, url: base + "/healthz"))
        #expect(health.status == 200)
        let list = try Self.run(["quarantine", "--config", configPath, "list"])
        let rows = try #require(try JSONParser.parse(Array(list.output.utf8)).arrayValue)
        #expect(rows.count == Self.extremes.count)
        #expect(rows.map { $0.objectValue?["last_replay_code"]?.stringValue ?? "" } == liveCodes)
        kill(child.process.processIdentifier, SIGTERM)
        child.process.waitUntilExit()
        #expect(child.process.terminationStatus == 0)
    }
}
