import Crypto
import Foundation
import HTTPServer
import Postgres
import SQLite
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// No configured secret is stored or logged, whatever carries it: bodies that are not JSON at all, a V1 password in a
/// body refused for another reason, a secret in a field where none belongs, a secret written with escapes — on both
/// stores, in every lane, and not in the SQLite file's free pages or write-ahead log either (docs/threat-model.md,
/// "Secret disclosure").
@Suite struct SecretRedactionTests {
    static let secret = GatewayHarness.v1Secret
    /// A shared secret of a bundle nobody configured: only the `password` rule can keep it out.
    static let foreignSecret = "fedcba9876543210fedcba9876543210"

    static var v1: String {
        String(decoding: (try? Fixtures.bytes("v1-synthetic/did-renew.json")) ?? [], as: UTF8.self)
    }
    static var wrongBundle: String {
        String(decoding: (try? Fixtures.bytes("v2-synthetic/negative/wrong-bundle.json")) ?? [], as: UTF8.self)
    }
    static var v2: String {
        String(decoding: (try? Fixtures.bytes("v2-synthetic/notif-did-renew.json")) ?? [], as: UTF8.self)
    }

    /// `body` with `member` written first in its top-level object.
    static func withFirst(_ member: String, in body: String) -> String { "{" + member + "," + body.dropFirst() }

    /// `v1` with a string member holding one byte that is never valid UTF-8.
    static var invalidUTF8: [UInt8] {
        Array(withFirst(#""note":"?""#, in: v1).utf8).enumerated().map { $0.offset == 9 ? 0xFF : $0.element }
    }

    /// Bodies that carry the real shared secret of a configured app and must be refused, with the code each gets.
    static var hostileBodies: [(name: String, body: [UInt8], code: String)] {
        [
            ("duplicate key", Array(withFirst(#""bvrs":"1""#, in: v1).utf8), "malformed_body"),
            ("trailing bytes", Array((v1 + "}garbage").utf8), "malformed_body"),
            ("invalid UTF-8", invalidUTF8, "malformed_body"),
            (
                "nesting deeper than 64",
                Array(
                    withFirst(
                        #""deep":"# + String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
                        in: v1
                    ).utf8
                ),
                "malformed_body"
            ),
            (
                "signedPayload beside it",
                Array(withFirst(#""signedPayload":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln""#, in: v1).utf8), "malformed"
            ),
            (
                "the secret in another field",
                Array(v1.replacingOccurrences(of: #""bvrs": "42""#, with: #""bvrs": "\#(secret)""#).utf8),
                "malformed_body"
            ),
            (
                "the secret escaped in a body that does not parse",
                Array(
                    (v1.replacingOccurrences(of: secret, with: #"\u0030123456789abcdef0123456789\u0061bcdef"#) + "]")
                        .utf8
                ),
                "malformed_body"
            ),
            (
                "the secret as the claimed bundle",
                Array(
                    v1.replacingOccurrences(of: #""bid": "com.example.gateway""#, with: #""bid": "\#(secret)""#)
                        .replacingOccurrences(of: #""password": "\#(secret)""#, with: #""password": "nope""#).utf8
                ), "unknown_bundle"
            ),
            (
                "a V2 body with the secret beside its payload",
                Array(withFirst(#""note":"\#(secret)""#, in: v2).utf8),
                "malformed_body"
            ),
            (
                "a V2 body of an unconfigured bundle with the secret beside its payload",
                Array(withFirst(#""note":"\#(secret)""#, in: wrongBundle).utf8),
                "unknown_bundle"
            ),
        ]
    }

    /// Every byte string that would reveal a secret: its text, and the password value of a foreign V1 body.
    static let forbidden = [secret, foreignSecret]

    static func reveals(_ bytes: [UInt8]) -> String? { forbidden.first { contains(bytes, Array($0.utf8)) } }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { i in
            haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle)
        }
    }

    @Test func theHostileBodiesReallyCarryTheSecret() {
        for (name, body, _) in Self.hostileBodies {
            let text = String(decoding: body, as: UTF8.self)
            #expect(text.contains(Self.secret) || text.contains(#"\u0030123"#) || body.contains(0xFF), "\(name)")
        }
        #expect(Self.hostileBodies.first { $0.name == "invalid UTF-8" }?.body.contains(0xFF) == true)
    }

    /// Runs every hostile body (and a foreign app's V1 body whose JSON is broken) through the Apple-facing route, with
    /// its log line, on `store`; returns the log.
    static func ingestAll(_ service: GatewayService) throws -> [String] {
        let logs = GatewayServiceTests.LogBox()
        let routes = PublicRoutes(
            ingest: service.ingest,
            receipts: service.receiptEndpoint,
            metrics: service.metrics,
            log: Log(now: { GatewayHarness.t }, sink: { logs.append($0) })
        )
        for (name, body, code) in hostileBodies {
            let answer = routes.handle(ServerRequest(method: "POST", path: "/notifications", body: body))
            #expect(answer.status != 200, "\(name)")
            let error = try JSONParser.parse(answer.body).objectValue?["error"]?.objectValue
            #expect(error?["code"]?.stringValue == code, "\(name)")
            #expect(reveals(answer.body) == nil, "\(name): the answer")
        }
        let foreign =
            v1.replacingOccurrences(of: "com.example.gateway", with: "com.example.elsewhere")
            .replacingOccurrences(of: secret, with: foreignSecret) + "trailing"
        #expect(
            routes.handle(ServerRequest(method: "POST", path: "/notifications", body: Array(foreign.utf8))).status
                == 400
        )
        return logs.all
    }

    static func expectNothingRevealed(_ store: any GatewayStore, logs: [String]) throws {
        let rows = try store.quarantined()
        #expect(rows.count == hostileBodies.count + 1, "every refusal quarantined")
        #expect(Set(rows.map(\.lane)) == [.untrusted, .genuine], "both lanes")
        for row in rows {
            #expect(
                reveals(row.body) == nil,
                "quarantine row \(row.id) (\(row.code)) body: \(String(decoding: row.body, as: UTF8.self).prefix(300))"
            )
            for text in [row.message, row.bundleID ?? "", row.environment ?? "", row.code] {
                #expect(reveals(Array(text.utf8)) == nil, "quarantine row \(row.id) text")
            }
        }
        #expect(try store.journal().isEmpty, "nothing carrying a secret was journaled")
        for line in logs { #expect(reveals(Array(line.utf8)) == nil, "log line: \(line)") }
        // What stood there is named, never shown.
        #expect(rows.contains { String(decoding: $0.body, as: UTF8.self).contains("iapgw-secret:APP_SECRET") })
        #expect(rows.contains { String(decoding: $0.body, as: UTF8.self).contains(SecretRedactor.passwordPlaceholder) })
    }

    @Test func noSecretReachesTheSQLiteStoreItsLogOrTheLogLines() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let logs = try Self.ingestAll(h.service)
        try Self.expectNothingRevealed(h.store, logs: logs)
        // Not in the database file, its write-ahead log or shared memory, free pages included.
        for suffix in ["", "-wal", "-shm"] {
            let bytes = (try? Array(Data(contentsOf: URL(filePath: h.config.sqlitePath + suffix)))) ?? []
            #expect(Self.reveals(bytes) == nil, "gateway.db\(suffix)")
        }
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func noSecretReachesThePostgreSQLStore() throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try GatewayConfig.parse(Array(GatewayHarness.configJSON.utf8), baseDirectory: directory)
        let service = try GatewayHarness.service(config: config, store: store, now: GatewayHarness.t + 3_600_000)
        let logs = try Self.ingestAll(service)
        try Self.expectNothingRevealed(store, logs: logs)
        // Searched by the server itself, in every text and bytea column of every table.
        let c = try schema.connect()
        defer { c.close() }
        for s in Self.forbidden {
            let hits = try c.queryOne(
                """
                SELECT count(*) AS n FROM quarantine
                WHERE position(convert_to($1, 'UTF8') IN body) > 0 OR message LIKE '%' || $1 || '%' OR bundle_id LIKE '%' || $1 || '%'
                """,
                [.text(s)]
            )?.int64("n")
            #expect(hits == 0)
        }
    }

    // MARK: Rows stored before bodies were redacted

    /// A store as an earlier gateway left it: quarantine rows holding the secret, five of them evicted since (their
    /// bytes in free pages, where a build of SQLite without `secure_delete` leaves them). `evictAndUnredact` evicts the
    /// first five rows and marks the others as stored before redaction.
    static func oldQuarantine(_ store: any GatewayStore, evictAndUnredact: ([Int64]) throws -> Void) throws {
        let padding = String(repeating: "p", count: 9_000)  // bodies bigger than a page: overflow pages
        for i in 0..<8 {
            // The password after the padding: in an overflow page, which an eviction frees whole.
            let body = Array(
                (#"{"notification_type":"DID_RENEW","pad":"\#(padding)","password":"\#(secret)","i":\#(i)}"# + "x").utf8
            )
            let record = QuarantineRecord(
                lane: .untrusted,
                receivedAt: GatewayHarness.t,
                version: nil,
                code: "malformed_body",
                message: "body is not JSON",
                bundleID: "com.example.gateway",
                body: body
            )
            _ = try store.write { tx in
                try tx.quarantine(record, cap: QuarantineCap(rows: 1_000, bytes: 1 << 30, evictsOldest: true))
            }
        }
        try evictAndUnredact(Array(try store.quarantined().map(\.id).prefix(5)))
    }

    @Test func theFirstStartScrubsRowsStoredBeforeRedactionAndTheirFreedSpace() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        do {
            let store = try SQLiteStore(path: path)
            try Self.oldQuarantine(store) { evicted in
                let db = try SQLiteDatabase(path: path)
                defer { db.close() }
                try db.write { c in
                    try c.execute("PRAGMA secure_delete = OFF")
                    for id in evicted { _ = try c.run("DELETE FROM quarantine WHERE id = ?", [.integer(id)]) }
                    _ = try c.run("UPDATE quarantine SET redacted = 0")
                }
            }
            store.close()
        }
        let before = ["", "-wal"].flatMap { (try? Array(Data(contentsOf: URL(filePath: path + $0)))) ?? [] }
        #expect(Self.contains(before, Array(Self.secret.utf8)), "the old rows hold the secret")
        // The gateway starts over the store (as `serve` does): the rows are scrubbed once, the freed space erased.
        var config = try GatewayConfig.parse(Array(GatewayHarness.configJSON.utf8), baseDirectory: directory)
        config.sqlitePath = path
        let store = try SQLiteStore(path: path)
        _ = try GatewayHarness.service(config: config, store: store, now: GatewayHarness.t)
        let rows = try store.quarantined()
        #expect(rows.count == 3)
        for row in rows {
            #expect(Self.reveals(row.body) == nil)
            #expect(String(decoding: row.body, as: UTF8.self).contains("iapgw-secret:APP_SECRET"))
        }
        #expect(try store.read { try $0.quarantineUsage() }[.untrusted]?.rows == 3)
        #expect(try store.read { try $0.quarantineUsage() }[.untrusted]?.bytes == rows.reduce(0) { $0 + $1.storedSize })
        #expect(
            try store.scrubQuarantine(SecretRedactor([])) == QuarantineScrubReport(),
            "once: nothing is left to look at"
        )
        store.close()
        for suffix in ["", "-wal", "-shm"] {
            let bytes = (try? Array(Data(contentsOf: URL(filePath: path + suffix)))) ?? []
            #expect(Self.reveals(bytes) == nil, "gateway.db\(suffix) after the scrub")
        }
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func postgreSQLRowsStoredBeforeRedactionAreScrubbedAndTheTableRewritten() throws {
        let schema = try TestSchema()
        let c = try schema.connect()
        defer { c.close() }
        do {
            let store = try PostgresStore(url: schema.url)
            try Self.oldQuarantine(store) { evicted in
                for id in evicted { _ = try c.run("DELETE FROM quarantine WHERE id = $1", [.int64(id)]) }
                _ = try c.run("UPDATE quarantine SET redacted = false")
            }
            store.close()
        }
        let fileBefore = try c.queryOne("SELECT pg_relation_filenode('quarantine') AS f")?.int64("f")
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        let report = try store.scrubQuarantine(
            SecretRedactor([SecretRedactor.Secret(name: "APP_SECRET", value: Array(Self.secret.utf8))])
        )
        #expect(report == QuarantineScrubReport(examined: 3, changed: 3))
        let hits = try c.queryOne(
            "SELECT count(*) AS n FROM quarantine WHERE position(convert_to($1, 'UTF8') IN body) > 0",
            [.text(Self.secret)]
        )?.int64("n")
        #expect(hits == 0)
        #expect(try c.queryOne("SELECT count(*) AS n FROM quarantine WHERE NOT redacted")?.int64("n") == 0)
        #expect(
            try c.queryOne("SELECT pg_relation_filenode('quarantine') AS f")?.int64("f") != fileBefore,
            "VACUUM FULL rewrote it"
        )
        #expect(
            try store.read { try $0.quarantineUsage() }[.untrusted]?.bytes
                == store.quarantined().reduce(0) { $0 + $1.storedSize }
        )
    }
}
