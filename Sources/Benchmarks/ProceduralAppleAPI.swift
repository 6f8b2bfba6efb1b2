internal import FoundationEssentials
internal import HTTPServer
import Synchronization
internal import V2Adapter

/// One customer of `bench receipt-scale`'s App Store Server API, derived from its number alone: the base's customers
/// (numbers below the base's size) have 1–30 transactions — monthly periods of one subscription, some non-consumables
/// and consumables, the subscription active for about 70 % of them — and a purchase (a number from the base's size up)
/// has the one period just bought. Apple's order: oldest first.
struct ProceduralCustomer: Sendable, Equatable {
    struct Transaction: Sendable, Equatable {
        var id: String
        var originalID: String
        var product: String
        /// Apple's `type` of the transaction, and its `productType` filter value.
        var type: String
        var productType: String
        var purchase: Int64
        var originalPurchase: Int64
        var expires: Int64?
    }

    static let day: Int64 = 86_400_000
    /// The original transaction id of customer 0; customer k's is this + k.
    static let firstOriginalID: Int64 = 2_000_000_000_000_000

    let number: Int
    let periods: Int
    let nonConsumables: Int
    let consumables: Int
    let active: Bool

    init(number: Int, baseSize: Int) {
        self.number = number
        guard number < baseSize else {
            (periods, nonConsumables, consumables, active) = (1, 0, 0, true)
            return
        }
        let h = Self.mix(UInt64(number))
        let total = 1 + Int(h % 30)
        let nonConsumables = total >= 5 ? Int((h >> 8) % 4) : 0
        let consumables = total >= 10 ? Int((h >> 16) % UInt64(total / 3)) : 0
        (self.nonConsumables, self.consumables) = (nonConsumables, consumables)
        periods = total - nonConsumables - consumables
        active = (h >> 24) % 10 < 7
    }

    /// The original transaction id of the subscription, which the customer's receipt names.
    var originalTransactionID: String { String(Self.firstOriginalID + Int64(number)) }

    /// The customer of an original transaction id; nil for one this API does not know.
    static func number(of originalTransactionID: String) -> Int? {
        guard let id = Int64(originalTransactionID), id >= firstOriginalID, id - firstOriginalID < 1 << 40 else {
            return nil
        }
        return Int(id - firstOriginalID)
    }

    var total: Int { periods + nonConsumables + consumables }
    /// What Get Transaction History lists with the receipt path's filter (every type but consumables).
    var listed: Int { periods + nonConsumables }
    /// The pages of 20 that filtered list takes (at least one, empty or not).
    var pages: Int { max(1, (listed + 19) / 20) }

    /// When the newest period started, from `epoch` (ms): 15 days ago, or 75 days ago for a lapsed subscription.
    func lastPeriodStart(epoch: Int64) -> Int64 { epoch - (active ? 15 : 75) * Self.day }

    /// Every transaction, Apple's order (oldest first), the kinds interleaved.
    func transactions(epoch: Int64) -> [Transaction] {
        let k = Int64(number) * 64
        let last = lastPeriodStart(epoch: epoch)
        let firstStart = last - Int64(periods - 1) * 30 * Self.day
        var out: [Transaction] = []
        out.reserveCapacity(total)
        for j in 0..<max(periods, nonConsumables, consumables) {
            if j < periods {
                let start = last - Int64(periods - 1 - j) * 30 * Self.day
                out.append(
                    Transaction(
                        id: j == 0 ? originalTransactionID : String(3_000_000_000_000_000 + k + Int64(j)),
                        originalID: originalTransactionID,
                        product: "com.example.bench.monthly",
                        type: "Auto-Renewable Subscription",
                        productType: "AUTO_RENEWABLE",
                        purchase: start,
                        originalPurchase: firstStart,
                        expires: start + 30 * Self.day
                    )
                )
            }
            if j < nonConsumables {
                let id = String(4_000_000_000_000_000 + k + Int64(j))
                out.append(
                    Transaction(
                        id: id,
                        originalID: id,
                        product: "com.example.bench.pack\(j)",
                        type: "Non-Consumable",
                        productType: "NON_CONSUMABLE",
                        purchase: last - Int64(nonConsumables - j) * Self.day,
                        originalPurchase: last - Int64(nonConsumables - j) * Self.day,
                        expires: nil
                    )
                )
            }
            if j < consumables {
                let id = String(5_000_000_000_000_000 + k + Int64(j))
                out.append(
                    Transaction(
                        id: id,
                        originalID: id,
                        product: "com.example.bench.coins",
                        type: "Consumable",
                        productType: "CONSUMABLE",
                        purchase: last - Int64(consumables - j) * Self.day,
                        originalPurchase: last - Int64(consumables - j) * Self.day,
                        expires: nil
                    )
                )
            }
        }
        return out
    }

    /// A 64-bit finalizer (SplitMix64's): the customer's shape from its number.
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The App Store Server API of `bench receipt-scale` (docs/performance.md): Get Transaction History (pages of 20,
/// Apple's `productType` filter, `revision`) and Get All Subscription Statuses for any customer of
/// ``ProceduralCustomer``, every transaction signed as it is served; Apple's rate limits enforced per endpoint — at
/// most `perSecond` requests in any second of the clock and `perHour` in any hour of it, beyond them HTTP 429 with
/// Apple's `RateLimitExceededError` and `Retry-After` the UNIX time in milliseconds when the next window opens — and,
/// when asked, every call held while Apple hangs. Counts what it received: calls per endpoint, the most in one second,
/// the 429s, the customers answered.
final class ProceduralAppleAPI: Sendable {
    enum Endpoint: String, CaseIterable, Sendable {
        case transactionHistory = "transaction_history"
        case subscriptionStatuses = "subscription_statuses"
    }

    /// An endpoint's allowance.
    struct Allowance: Sendable, Equatable {
        var perSecond: Int
        var perHour: Int
    }

    /// What the fake received on one endpoint.
    struct EndpointStats: Sendable, Equatable {
        var calls = 0
        var ok = 0
        var rateLimited = 0
        var maxCallsPerSecond = 0
        /// Distinct customers answered 200 at least once.
        var customers = 0
    }

    private struct Window {
        var second: Int64 = .min
        var inSecond = 0
        var hour: Int64 = .min
        var inHour = 0
        /// Every call received in the current second (admitted or not), and the most in any second.
        var receivedSecond: Int64 = .min
        var received = 0
        var maxReceived = 0
        var calls = 0
        var ok = 0
        var rateLimited = 0
        var customers: Set<Int> = []
    }

    private struct State {
        var windows: [Endpoint: Window] = [:]
        var hang: (from: Int64, until: Int64)?
        var notFound = 0
    }

    let bundleID: String
    let signer: AppleJWSSigner
    let baseSize: Int
    let allowance: Allowance
    /// The moment the histories are drawn around (ms).
    let epoch: Int64
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())

    init(
        signer: AppleJWSSigner,
        bundleID: String,
        baseSize: Int,
        allowance: Allowance,
        epoch: Int64,
        now: @escaping @Sendable () -> Int64
    ) {
        (self.signer, self.bundleID, self.baseSize, self.allowance) = (signer, bundleID, baseSize, allowance)
        (self.epoch, self.now) = (epoch, now)
    }

    static let rateLimitedBody = Array(#"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#.utf8)
    static let notFoundBody = Array(#"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#.utf8)

    /// From `from` until `until` (UNIX ms), every call is held until `until`, then answered as usual.
    func hang(from: Int64, until: Int64) { state.withLock { $0.hang = (from, until) } }

    func stats(_ endpoint: Endpoint) -> EndpointStats {
        state.withLock { s in
            let w = s.windows[endpoint] ?? Window()
            return EndpointStats(
                calls: w.calls,
                ok: w.ok,
                rateLimited: w.rateLimited,
                maxCallsPerSecond: w.maxReceived,
                customers: w.customers.count
            )
        }
    }

    /// Calls for an endpoint this fake does not serve or a customer it does not know (404).
    var notFound: Int { state.withLock { $0.notFound } }

    /// The HTTP server's handler: answered by ``answer(_:at:)``, and held while Apple hangs. Apple counts a request
    /// when it arrives, so a held one is counted and judged then, its answer given when the hang ends.
    func handle(_ request: ServerRequest) -> ServerResponse {
        let t = now()
        let response = answer(request, at: t)
        if let hang = state.withLock({ $0.hang }), t >= hang.from, t < hang.until {
            return .later {
                try? await Task.sleep(for: .milliseconds(hang.until - t))
                return response
            }
        }
        return response
    }

    /// The endpoint and customer `request` asks about, its rate checked and counted as of `t` (its arrival), and its
    /// answer.
    func answer(_ request: ServerRequest, at t: Int64) -> ServerResponse {
        let parts = request.path.split(separator: "/").map(String.init)
        let endpoint: Endpoint? =
            switch (request.method, parts.count == 4 ? parts[0] + "/" + parts[1] + "/" + parts[2] : "") {
            case ("GET", "inApps/v2/history"): .transactionHistory
            case ("GET", "inApps/v1/subscriptions"): .subscriptionStatuses
            default: nil
            }
        guard let endpoint, let number = ProceduralCustomer.number(of: parts[3]) else {
            state.withLock { $0.notFound += 1 }
            return .json(404, Self.notFoundBody)
        }
        if let retryAt = admit(endpoint, at: t) {
            return ServerResponse(
                status: 429,
                headers: [
                    (name: "Content-Type", value: "application/json"), (name: "Retry-After", value: "\(retryAt)"),
                ],
                body: Self.rateLimitedBody
            )
        }
        let customer = ProceduralCustomer(number: number, baseSize: baseSize)
        do {
            let body =
                switch endpoint {
                case .transactionHistory: try history(customer, request.queryItems)
                case .subscriptionStatuses: try statuses(customer)
                }
            state.withLock { s in
                s.windows[endpoint, default: Window()].ok += 1
                s.windows[endpoint, default: Window()].customers.insert(number)
            }
            return .json(200, body)
        } catch {
            return .json(500, Array(#"{"errorCode":5000000,"errorMessage":"An unknown error occurred."}"#.utf8))
        }
    }

    /// nil when a call of `endpoint` at `t` (ms) fits Apple's allowance (and is counted); otherwise the UNIX time in
    /// milliseconds when the next one fits: the end of the hour when the hour's allowance is spent, else the end of the
    /// second. Every call counts toward the most received in a second; a refused one uses no allowance.
    func admit(_ endpoint: Endpoint, at t: Int64) -> Int64? {
        let second = Self.floor(t, 1_000)
        let hour = Self.floor(t, 3_600_000)
        return state.withLock { s in
            var w = s.windows[endpoint, default: Window()]
            defer { s.windows[endpoint] = w }
            w.calls += 1
            if w.receivedSecond != second { (w.receivedSecond, w.received) = (second, 0) }
            w.received += 1
            w.maxReceived = max(w.maxReceived, w.received)
            if w.second != second { (w.second, w.inSecond) = (second, 0) }
            if w.hour != hour { (w.hour, w.inHour) = (hour, 0) }
            if w.inHour >= allowance.perHour {
                w.rateLimited += 1
                return hour + 3_600_000
            }
            if w.inSecond >= allowance.perSecond {
                w.rateLimited += 1
                return second + 1_000
            }
            w.inSecond += 1
            w.inHour += 1
            return nil
        }
    }

    /// A page of the customer's history: 20 transactions of the requested product types from `revision` (an offset).
    func history(_ customer: ProceduralCustomer, _ query: [(name: String, value: String)]) throws -> [UInt8] {
        let types = Set(query.filter { $0.name == "productType" }.map(\.value))
        let matching = customer.transactions(epoch: epoch).filter { types.isEmpty || types.contains($0.productType) }
        let offset = min(max(Int(query.first { $0.name == "revision" }?.value ?? "0") ?? 0, 0), matching.count)
        let page = matching[offset...].prefix(20)
        let next = offset + page.count
        let signed = try page.map { "\"\(try sign($0))\"" }.joined(separator: ",")
        return Array(
            """
            {"revision":"\(next)","hasMore":\(next < matching.count),"bundleId":"\(bundleID)","appAppleId":1,\
            "environment":"Sandbox","signedTransactions":[\(signed)]}
            """.utf8
        )
    }

    /// The customer's subscription group: its newest period, active (1) or expired (2), and its renewal info.
    func statuses(_ customer: ProceduralCustomer) throws -> [UInt8] {
        let otid = customer.originalTransactionID
        guard let latest = customer.transactions(epoch: epoch).last(where: { $0.productType == "AUTO_RENEWABLE" })
        else { return Array(#"{"environment":"Sandbox","bundleId":"\#(bundleID)","appAppleId":1,"data":[]}"#.utf8) }
        let renewal = try signer.sign(
            payload: Array(
                """
                {"originalTransactionId":"\(otid)","autoRenewProductId":"com.example.bench.monthly",\
                "productId":"com.example.bench.monthly","autoRenewStatus":\(customer.active ? 1 : 0),\
                "signedDate":\(epoch),"environment":"Sandbox"}
                """.utf8
            )
        )
        return Array(
            """
            {"environment":"Sandbox","bundleId":"\(bundleID)","appAppleId":1,"data":[{"subscriptionGroupIdentifier":\
            "21000001","lastTransactions":[{"status":\(customer.active ? 1 : 2),"originalTransactionId":"\(otid)",\
            "signedTransactionInfo":"\(try sign(latest))","signedRenewalInfo":"\(renewal)"}]}]}
            """.utf8
        )
    }

    func sign(_ t: ProceduralCustomer.Transaction) throws -> String {
        let expiry =
            t.expires.map {
                #","expiresDate":\#($0),"webOrderLineItemId":"\#(t.id)9","subscriptionGroupIdentifier":"21000001""#
            } ?? ""
        return try signer.sign(
            payload: Array(
                """
                {"transactionId":"\(t.id)","originalTransactionId":"\(t.originalID)","bundleId":"\(bundleID)",\
                "productId":"\(t.product)","purchaseDate":\(t.purchase),"originalPurchaseDate":\(t.originalPurchase),\
                "quantity":1,"type":"\(t.type)","inAppOwnershipType":"PURCHASED","signedDate":\(epoch),\
                "environment":"Sandbox"\(expiry)}
                """.utf8
            )
        )
    }

    /// The start of the window of `length` that holds `t` (ms).
    static func floor(_ t: Int64, _ length: Int64) -> Int64 {
        let r = t % length
        return r < 0 ? t - r - length : t - r
    }
}
