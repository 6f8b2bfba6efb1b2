import Crypto
import Foundation
import HTTPServer
import Receipts
import Synchronization
import TestPKI
import Testing
import V2Adapter
import WireJSON

@testable import Benchmarks

/// `bench receipt-scale`'s parts: the skewed customer draw, the procedural App Store Server API (Apple's rate limits,
/// `Retry-After` in milliseconds, the histories' shape), the receipts, the metrics read; and a tiny run of the built
/// binary, checked for its shape only (its figures are the bench's job, in a release build).
@Suite struct ReceiptScaleBenchmarkTests {
    /// The fake's clock, moved by the test.
    final class TestClock: Sendable {
        let millis: Atomic<Int64>
        init(_ t: Int64) { millis = Atomic(t) }
        func now() -> Int64 { millis.load(ordering: .relaxed) }
        func set(_ t: Int64) { millis.store(t, ordering: .relaxed) }
    }

    static let epoch: Int64 = 1_800_000_000_000

    static func fake(
        perSecond: Int = 50,
        perHour: Int = 180_000,
        clock: TestClock
    ) throws -> ProceduralAppleAPI {
        let pki = try GeneratedTestPKI.generate(
            notBefore: epoch / 1000 - 86_400,
            notAfter: epoch / 1000 + 86_400,
            name: "receipt-scale test"
        )
        return ProceduralAppleAPI(
            signer: try AppleJWSSigner(
                leaf: pki.leaf,
                intermediate: pki.intermediate,
                root: pki.root,
                leafKey: pki.leafKey
            ),
            bundleID: "com.example.bench",
            baseSize: 1_000,
            allowance: .init(perSecond: perSecond, perHour: perHour),
            epoch: epoch,
            now: clock.now
        )
    }

    static func get(
        _ fake: ProceduralAppleAPI,
        _ path: String,
        _ query: [(name: String, value: String)] = []
    )
        -> ServerResponse
    {
        fake.handle(ServerRequest(method: "GET", path: path, queryItems: query))
    }

    static func payload(_ jws: String) throws -> JSONValue {
        let parts = jws.split(separator: ".")
        #expect(parts.count == 3)
        return try JSONParser.parse(try Base64.decode(Array(parts[1].utf8), alphabet: .url))
    }

    @Test func theSameSeedDrawsTheSameCustomersAndStreamsDiffer() {
        func draw(_ stream: Int, seed: UInt64 = 7) -> [Int] {
            var s = SkewedCustomers(customers: 1_000_000, seed: seed, stream: stream, streams: 4)
            return (0..<500).map { _ in s.next().customer }
        }
        #expect(draw(0) == draw(0))
        #expect(draw(1) == draw(1))
        #expect(draw(0) != draw(1))
        #expect(draw(0, seed: 8) != draw(0))
    }

    @Test func streamsOfOneSeedDrawDifferentNumbers() {
        // Not one sequence shifted by a draw or two: no number of one stream's first thousand is in another's.
        func numbers(_ stream: Int) -> Set<UInt64> {
            var r = SplitMix64(seed: 1, stream: stream)
            return Set((0..<1_000).map { _ in r.next() })
        }
        let streams = (0..<8).map(numbers)
        for a in 0..<8 {
            for b in (a + 1)..<8 { #expect(streams[a].isDisjoint(with: streams[b]), "\(a) and \(b)") }
        }
    }

    @Test func aFewCustomersAreAskedOftenAndPurchasesAreNeverSeenBefore() {
        let n = 1_000_000
        var purchases: [Int] = []
        var ranks: [Int] = []
        for stream in 0..<3 {
            var s = SkewedCustomers(customers: n, purchaseFraction: 0.02, seed: 42, stream: stream, streams: 3)
            for _ in 0..<20_000 {
                let (customer, purchase) = s.next()
                if purchase { purchases.append(customer) } else { ranks.append(customer) }
            }
        }
        #expect(ranks.allSatisfy { (0..<n).contains($0) })
        // Bounded Zipf of exponent 1 over a million: the first 1 % of ranks take about two thirds of the requests,
        // the most asked customer about 5 % of them; the last half of the ranks about 5 %.
        let top = ranks.filter { $0 < n / 100 }.count
        #expect(Double(top) / Double(ranks.count) > 0.6, "\(top) of \(ranks.count)")
        let first = ranks.filter { $0 == 0 }.count
        #expect((0.03...0.08).contains(Double(first) / Double(ranks.count)), "\(first)")
        let bottom = ranks.filter { $0 >= n / 2 }.count
        #expect(Double(bottom) / Double(ranks.count) < 0.1, "\(bottom)")
        // About 2 % are purchases, each a customer past the base, none twice, across streams too.
        #expect((800...1_600).contains(purchases.count), "\(purchases.count)")
        #expect(purchases.allSatisfy { $0 >= n })
        #expect(Set(purchases).count == purchases.count)
    }

    @Test func theRankLawCoversTheBase() {
        let s = SkewedCustomers(customers: 1_000, seed: 1)
        #expect(s.rank(0) == 0)
        #expect(s.rank(0.999_999_999) == 999)
        #expect((0..<1_000).contains(s.rank(0.5)))
        let steeper = SkewedCustomers(customers: 1_000, exponent: 1.5, seed: 1)
        #expect(steeper.rank(0.5) < s.rank(0.5))
    }

    @Test func customersHaveOneToThirtyTransactionsAndPurchasesOne() {
        for number in 0..<2_000 {
            let c = ProceduralCustomer(number: number, baseSize: 2_000)
            #expect((1...30).contains(c.total) && c.periods >= 1 && (1...2).contains(c.pages), "\(c)")
            #expect(c == ProceduralCustomer(number: number, baseSize: 2_000))
            let t = c.transactions(epoch: Self.epoch)
            #expect(t.count == c.total && t[0].id == c.originalTransactionID)
            #expect(Set(t.map(\.id)).count == t.count)
            #expect(ProceduralCustomer.number(of: c.originalTransactionID) == number)
        }
        let purchase = ProceduralCustomer(number: 2_000, baseSize: 2_000)
        #expect(purchase.total == 1 && purchase.active)
        #expect(ProceduralCustomer.number(of: "42") == nil && ProceduralCustomer.number(of: "x") == nil)
    }

    @Test func beyondTheSecondsAllowanceApple429sWithTheNextSecondInMilliseconds() throws {
        let clock = TestClock(Self.epoch + 250)
        let fake = try Self.fake(perSecond: 2, clock: clock)
        let customer = ProceduralCustomer(number: 3, baseSize: 1_000).originalTransactionID
        let path = "/inApps/v1/subscriptions/\(customer)"
        #expect(Self.get(fake, path).status == 200)
        #expect(Self.get(fake, path).status == 200)
        let refused = Self.get(fake, path)
        #expect(refused.status == 429)
        #expect(refused.header("Retry-After") == String(Self.epoch + 1_000))
        #expect(refused.body == Array(#"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#.utf8))
        // Per endpoint: Get Transaction History still has its own allowance.
        #expect(Self.get(fake, "/inApps/v2/history/\(customer)").status == 200)
        // The next second lets two more through.
        clock.set(Self.epoch + 1_000)
        #expect(Self.get(fake, path).status == 200)
        let stats = fake.stats(.subscriptionStatuses)
        #expect(stats == .init(calls: 4, ok: 3, rateLimited: 1, maxCallsPerSecond: 3, customers: 1))
        #expect(fake.stats(.transactionHistory).calls == 1)
    }

    @Test func beyondTheHoursAllowanceRetryAfterIsTheNextHour() throws {
        let hour: Int64 = 3_600_000
        let start = (Self.epoch / hour) * hour + 10_000
        let clock = TestClock(start)
        let fake = try Self.fake(perSecond: 5, perHour: 2, clock: clock)
        let path = "/inApps/v1/subscriptions/\(ProceduralCustomer(number: 1, baseSize: 1_000).originalTransactionID)"
        #expect(Self.get(fake, path).status == 200)
        clock.set(start + 5_000)
        #expect(Self.get(fake, path).status == 200)
        clock.set(start + 9_000)
        let refused = Self.get(fake, path)
        #expect(refused.status == 429 && refused.header("Retry-After") == String(start - 10_000 + hour))
        clock.set(start - 10_000 + hour)
        #expect(Self.get(fake, path).status == 200)
    }

    @Test func historyPagesListTwentyOfTheFilteredTypesSigned() throws {
        let fake = try Self.fake(clock: TestClock(Self.epoch))
        // A customer whose filtered history takes two pages and who has consumables.
        guard
            let c = (0..<1_000).lazy.map({ ProceduralCustomer(number: $0, baseSize: 1_000) })
                .first(where: { $0.listed > 20 && $0.consumables > 0 })
        else {
            Issue.record("no customer of two pages")
            return
        }
        let filter = ["AUTO_RENEWABLE", "NON_RENEWABLE", "NON_CONSUMABLE"].map { (name: "productType", value: $0) }
        let path = "/inApps/v2/history/\(c.originalTransactionID)"
        var ids: [String] = []
        var revision: String?
        for page in 0..<2 {
            let answer = Self.get(fake, path, filter + (revision.map { [(name: "revision", value: $0)] } ?? []))
            #expect(answer.status == 200)
            let o = try JSONParser.parse(answer.body).objectValue
            let signed = o?["signedTransactions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(signed.count == (page == 0 ? 20 : c.listed - 20))
            #expect(o?["hasMore"] == .bool(page == 0) && o?["bundleId"]?.stringValue == "com.example.bench")
            for jws in signed {
                let p = try Self.payload(jws).objectValue
                #expect(p?["type"]?.stringValue != "Consumable")
                ids.append(p?["transactionId"]?.stringValue ?? "")
            }
            revision = o?["revision"]?.stringValue
        }
        #expect(Set(ids).count == c.listed && ids.first == c.originalTransactionID)
        // Unfiltered, the consumables are there too.
        let all = try JSONParser.parse(Self.get(fake, path).body).objectValue
        #expect(all?["signedTransactions"]?.arrayValue?.count == min(20, c.total))
    }

    @Test func statusesNameTheNewestPeriodAndUnknownCallsAre404() throws {
        let fake = try Self.fake(clock: TestClock(Self.epoch))
        for number in [0, 1, 2, 5_000] {
            let c = ProceduralCustomer(number: number, baseSize: 1_000)
            let answer = Self.get(fake, "/inApps/v1/subscriptions/\(c.originalTransactionID)")
            let group = try JSONParser.parse(answer.body).objectValue?["data"]?.arrayValue?.first?.objectValue
            let last = group?["lastTransactions"]?.arrayValue?.first?.objectValue
            #expect(last?["status"]?.int64Value == (c.active ? 1 : 2))
            let info = try Self.payload(last?["signedTransactionInfo"]?.stringValue ?? "").objectValue
            #expect(info?["expiresDate"]?.int64Value == c.lastPeriodStart(epoch: Self.epoch) + 30 * 86_400_000)
        }
        #expect(Self.get(fake, "/inApps/v1/subscriptions/123").status == 404)
        #expect(Self.get(fake, "/inApps/v1/transactions/2000000000000001").status == 404)
        #expect(fake.notFound == 2)
    }

    @Test func aCustomersReceiptNamesItsSubscription() throws {
        let pki = try GeneratedReceiptPKI.generate(notBefore: Self.epoch / 1000 - 86_400, notAfter: Self.epoch / 1000)
        let c = ProceduralCustomer(number: 17, baseSize: 1_000)
        let body = try ReceiptScaleBenchmark.ReceiptBodies.body(c, pki: pki, now: Self.epoch - 1_000)
        let data = try JSONParser.parse(body).objectValue?["receipt-data"]?.stringValue ?? ""
        let r = try ReceiptReader.read(Array(data.utf8), trust: ReceiptTrust(extraSandboxRoots: [pki.root.der]))
        #expect(r.signature.valid && r.lookupTransactionID == c.originalTransactionID)
    }

    @Test func readsCountersFromTheMetricsText() {
        let text = """
            # TYPE iapgw_receipt_history_total counter
            iapgw_receipt_history_total{result="fetched"} 12
            iapgw_receipt_history_total{result="fresh"} 300
            iapgw_receipt_history_total_other{result="x"} 1
            iapgw_receipt_history_calls_total{endpoint="transaction_history",outcome="ok"} 7
            iapgw_receipt_history_calls_total{endpoint="transaction_history",outcome="rate_limited"} 2
            """
        #expect(
            PrometheusText.counts(text, "iapgw_receipt_history_total", labels: ["result"])
                == ["fetched": 12, "fresh": 300]
        )
        #expect(
            PrometheusText.counts(text, "iapgw_receipt_history_calls_total", labels: ["endpoint", "outcome"])
                == ["transaction_history/ok": 7, "transaction_history/rate_limited": 2]
        )
    }

    @Test func appleRateReadsItsFlag() {
        #expect(ReceiptScaleBenchmark.AppleRate("production")?.allowance == .init(perSecond: 50, perHour: 180_000))
        #expect(ReceiptScaleBenchmark.AppleRate("sandbox")?.allowance == .init(perSecond: 5, perHour: 18_000))
        #expect(ReceiptScaleBenchmark.AppleRate("7")?.allowance == .init(perSecond: 7, perHour: 25_200))
        #expect(ReceiptScaleBenchmark.AppleRate("0") == nil && ReceiptScaleBenchmark.AppleRate("-1") == nil)
        #expect(ReceiptScaleBenchmark.AppleRate("fast") == nil)
    }

    @Test func aTinyRunOfTheBuiltBinaryPrintsEveryFigure() async throws {
        var options = ReceiptScaleBenchmark.Options()
        options.customers = 300
        options.seconds = 3
        options.clients = 4
        options.notificationsPerSecond = 5
        options.appleRate = .perSecond(20)
        options.hangSeconds = 1
        options.executable = MultiInstanceProcessTests.binary
        let r = try await ReceiptScaleBenchmark.run(options)
        #expect(r.requests > 0 && r.requests == r.warm.requests + r.cold.requests)
        #expect(r.answersByStatus.values.reduce(0, +) == r.requests)
        #expect(r.customersAsked > 0 && r.receiptsSigned >= 1)
        #expect(r.appleCallsTotal > 0 && r.appleLimitPerSecond == 20)
        #expect(Set(r.apple.keys) == ["transaction_history", "subscription_statuses"])
        #expect(r.notifications.sent > 0)
        #expect(!r.historyByResult.isEmpty, "the gateway's metrics were read")
        #expect(r.servePeakRSSMB > 0)
        let line = try JSONParser.parse(Array(JSONEncoder().encode(r))).objectValue
        for key in [
            "customers", "seconds", "apple_rate", "clients", "answers_by_status", "warm", "cold", "apple_429",
            "apple_max_calls_per_second", "projected_prefetch_hours", "notifications", "serve_peak_rss_mb",
            "invariants",
        ] {
            #expect(line?[key] != nil, "\(key)")
        }
    }
}
