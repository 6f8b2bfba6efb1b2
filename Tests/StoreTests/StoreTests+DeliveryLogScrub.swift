import Canonical
import Foundation
import Postgres
import SQLite
import Testing
import WireJSON

@testable import Store

/// The delivery log keeps each answer's head redacted: attempts logged before that are scrubbed once at start, a batch
/// at a time, and the space their old heads took is erased (docs/threat-model.md, "Secret disclosure").
extension StoreTests {
    static let scrubSecret = "0123456789abcdef0123456789abcdef"
    static let scrubSignature = "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="

    /// An error page quoting a V1 body and a webhook's headers, as a downstream answered before heads were redacted.
    static var quotingHead: [UInt8] {
        Array(
            #"<pre>{"password": "\#(scrubSecret)"} webhook-signature: \#(scrubSignature)</pre>"#.utf8
        )
    }

    /// Stores `heads` as the answers of attempts logged before heads were redacted: each written as it stands, the
    /// row not marked redacted.
    static func oldAttempts(_ f: Fixture, _ heads: [[UInt8]]) throws -> [Int64] {
        try Self.events(f, heads.indices.map { "old\($0)" }, createdAt: 5)
        var ids: [Int64] = []
        for (i, head) in heads.enumerated() {
            let delivery = try Self.delivery(f, "old\(i)", to: "main")
            try Self.attempt(f, delivery.id, 1)
            ids.append(delivery.id)
            switch f.kind {
            case .sqlite:
                let path = try #require(f.store as? SQLiteStore).path
                let db = try SQLiteDatabase(path: path)
                defer { db.close() }
                try db.write { c in
                    _ = try c.run(
                        "UPDATE delivery_attempts SET response_head = ?, redacted = 0 WHERE outbox_id = ?",
                        [.blob(head), .integer(delivery.id)]
                    )
                }
            case .postgres:
                let c = try #require(f.schema).connect()
                defer { c.close() }
                _ = try c.run(
                    "UPDATE delivery_attempts SET response_head = $1, redacted = false WHERE outbox_id = $2",
                    [.bytea(head), .int64(delivery.id)]
                )
            }
        }
        return ids
    }

    static func head(_ f: Fixture, _ outboxID: Int64) throws -> [UInt8] {
        let rows = try f.store.read { tx in
            try tx.deliveryPage(downstream: "main", state: .pending, after: .since(0), limit: 100)
        }
        return try #require(rows.first { $0.delivery.id == outboxID }?.attempts.first).responseHead
    }

    @Test(arguments: StoreKind.available) func attemptsLoggedBeforeHeadsWereRedactedAreScrubbedOnceInBatches(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let plain = Array("<h1>503 Service Unavailable</h1>".utf8)
        let ids = try Self.oldAttempts(f, [Self.quotingHead, Array("ok".utf8), plain, Self.quotingHead])
        #expect(
            try Self.head(f, ids[0]) == Self.quotingHead,
            "the old row holds the secret and the signature"
        )
        let redactor = SecretRedactor([.init(name: "APP_SECRET", value: Array(Self.scrubSecret.utf8))])
        // Batches of two: the three heads long enough to hold a secret (not "ok") take two transactions.
        let report = try f.store.scrubDeliveryLog(redactor, batch: 2)
        #expect(report == DeliveryLogScrubReport(examined: 3, changed: 2))
        for id in [ids[0], ids[3]] {
            let head = String(decoding: try Self.head(f, id), as: UTF8.self)
            #expect(
                head
                    == #"<pre>{"password": "iapgw-secret:APP_SECRET"} webhook-signature: v1,iapgw-secret:webhook-signature</pre>"#
            )
        }
        #expect(try Self.head(f, ids[1]) == Array("ok".utf8) && Self.head(f, ids[2]) == plain)
        #expect(try f.store.scrubDeliveryLog(redactor) == DeliveryLogScrubReport(), "once: nothing is left to look at")

        // Nowhere in the store's files either: the freed space was erased.
        switch kind {
        case .sqlite:
            let path = try #require(f.store as? SQLiteStore).path
            var bytes: [UInt8] = []
            for suffix in ["", "-wal"] {
                bytes += (try? Array(Data(contentsOf: URL(filePath: path + suffix)))) ?? []
            }
            for needle in [Self.scrubSecret, String(Self.scrubSignature.dropFirst(3))] {
                let found =
                    bytes.count >= needle.utf8.count
                    && (0...(bytes.count - needle.utf8.count)).contains { i in
                        bytes[i..<(i + needle.utf8.count)].elementsEqual(needle.utf8)
                    }
                #expect(!found, "\(needle) left in the file")
            }
        case .postgres:
            let c = try #require(f.schema).connect()
            defer { c.close() }
            let hits = try c.queryOne(
                "SELECT count(*) AS n FROM delivery_attempts WHERE position(convert_to($1, 'UTF8') IN response_head) > 0",
                [.text(Self.scrubSecret)]
            )?.int64("n")
            #expect(hits == 0)
            #expect(try c.queryOne("SELECT count(*) AS n FROM delivery_attempts WHERE NOT redacted")?.int64("n") == 1)
        }
    }

    @Test(arguments: StoreKind.available) func anAttemptLoggedNowIsMarkedRedactedAndNeverScrubbedAgain(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.events(f, ["e1"], createdAt: 5)
        let main = try Self.delivery(f, "e1", to: "main")
        let redactor = SecretRedactor([.init(name: "APP_SECRET", value: Array(Self.scrubSecret.utf8))])
        let attempt = DeliveryAttempt(
            startedAt: 1,
            latencyMillis: 1,
            responseHead: Self.quotingHead,
            redactor: redactor
        )
        let outcome = DeliveryOutcome(
            state: .pending,
            attempts: 1,
            nextAttemptAt: 0,
            deliveredAt: nil,
            status: 400,
            error: "HTTP 400",
            attempt: attempt
        )
        try f.store.write { tx in try tx.settleDelivery(id: main.id, outcome) }
        #expect(!String(decoding: try Self.head(f, main.id), as: UTF8.self).contains(Self.scrubSecret))
        #expect(try f.store.scrubDeliveryLog(redactor) == DeliveryLogScrubReport())
    }
}
