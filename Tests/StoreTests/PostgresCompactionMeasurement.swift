import Foundation
import Postgres
import Testing

@testable import Store

/// The upgrade of a large PostgreSQL store, measured (not part of the regular run): `IAPGW_MEASURE_PG_PLAIN=URL`
/// rewrites every compressed value of the store at URL (a libpq connection string, `options=-csearch_path=…` for a
/// schema, such as the one `bench scale --store postgres --keep` leaves) plain, as a gateway before migration 17 left
/// it. The first open of that store by a gateway — any command, e.g. `iap-gateway subscription` — then compresses
/// it again (``PostgresCompaction``): time it.
@Suite struct PostgresCompactionMeasurement {
    static let url = ProcessInfo.processInfo.environment["IAPGW_MEASURE_PG_PLAIN"]

    @Test(.enabled(if: url != nil, "IAPGW_MEASURE_PG_PLAIN is not set"))
    func rewriteALargeStorePlain() throws {
        let c = try PostgresConnection(try #require(Self.url), label: "measure")
        defer { c.close() }
        let started = ContinuousClock.now
        let rewritten = try PostgresCompactionTests.makePlain(c)
        try c.execute("VACUUM FULL")
        print("measure: \(rewritten) values rewritten plain in \(ContinuousClock.now - started)")
    }
}
