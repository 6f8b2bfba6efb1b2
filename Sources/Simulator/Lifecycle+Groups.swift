internal import Canonical

/// Group (multiseat) subscriptions as the simulated App Store plays them (docs/simulator.md, "Group subscriptions"): a
/// purchaser buys seats, adds some mid-period (a new transaction for the seats added, every transaction of the period
/// marked `SEAT_ADDITION`), reduces them at the next renewal, has some or all of them refunded; members of an
/// Apple-hosted group get transactions of their own (`ASSIGNED`); Apple unclaims a developer-hosted group's seats.
///
/// V2 tells each step with the fields Apple documents. V1 never knew seats: it tells the purchaser's subscription as
/// any other (a purchase, a renewal, a refund of the whole period) and a member's as a family-shared one (a purchase,
/// a `REVOKE`), and says nothing of a seat change, a seat refund or an unclaim — what the gateway's own V1 shape of the
/// same V2 notifications says. Which V2 `notificationType` carries `INCREASE_QUANTITY` and `DECREASE_QUANTITY`, and
/// which notifications a member's transaction causes, Apple's pages do not say: the simulator sends
/// `DID_CHANGE_RENEWAL_PREF` for both seat changes and `SUBSCRIBED` / `REVOKE` for a member, and the gateway decides
/// on the subtype whatever the type.
extension LifecycleContext {
    /// Buys `seats` seats of a group subscription to `product`: one transaction covering them, priced tier by tier
    /// (``SimProduct/seatTiers(_:after:)``; `price` the average), its invitations hosted by `invitations` (`APPLE` or
    /// `DEVELOPER`); the renewal info holds as many seats.
    @discardableResult
    public mutating func buyGroup(_ product: SimProduct, seats: Int, invitations: String = "APPLE") throws -> String {
        guard product.kind == .autoRenewable, seats > 0, invitations == "APPLE" || invitations == "DEVELOPER" else {
            throw SimulatorError(
                "bad_step",
                "a group buys one seat or more of a subscription, hosted by APPLE or DEVELOPER"
            )
        }
        let otid = world.newID()
        let tiers = product.seatTiers(seats)
        var t = SimTransaction(
            transactionID: otid,
            originalTransactionID: otid,
            webOrderLineItemID: world.newID(),
            productID: product.id,
            purchaseDate: now,
            originalPurchaseDate: now,
            expiresDate: now + period(product),
            priceMilli: SimSeatTier.average(tiers) ?? product.priceMilli
        )
        (t.seats, t.seatTiers, t.invitationManagement) = (seats, tiers, invitations)
        var renewal = SimRenewal(autoRenewProductID: product.id)
        renewal.renewalSeats = seats
        world.subscriptions[otid] = newSubscription(t, renewal: renewal)
        try emit(
            "buy \(seats) seats of \(product.id)",
            otid,
            v2: ("SUBSCRIBED", "INITIAL_BUY"),
            v1: ["INITIAL_BUY"],
            expectV2: ExpectedEvent(.purchase, .initial),
            expectV1: [ExpectedEvent(.purchase, .initial)]
        )
        return otid
    }

    /// The purchaser adds `count` seats now: a new transaction for the seats added alone, ending with the period and
    /// priced from where the period's seats end; it and every earlier transaction of the period say `SEAT_ADDITION`.
    /// The seats carry into the renewal. V1 sends nothing.
    public mutating func addSeats(_ otid: String, _ count: Int) throws {
        var s = try runningGroup(otid)
        guard count > 0, let latest = s.latest, let end = latest.expiresDate,
            let product = Catalogue.product(latest.productID)
        else {
            throw SimulatorError("bad_step", "\(otid): add one seat or more")
        }
        let tiers = product.seatTiers(count, after: s.groupSeats)
        let renewalSeats = (s.renewal?.renewalSeats ?? s.groupSeats).clampedAdding(count)
        if let last = emissions.last, now <= last.at { now = last.at + 1 }
        var t = SimTransaction(
            transactionID: world.newID(),
            originalTransactionID: otid,
            webOrderLineItemID: world.newID(),
            productID: latest.productID,
            purchaseDate: now,
            originalPurchaseDate: latest.originalPurchaseDate,
            expiresDate: end,
            priceMilli: SimSeatTier.average(tiers) ?? product.priceMilli
        )
        (t.seats, t.seatTiers, t.invitationManagement) = (count, tiers, latest.invitationManagement)
        for i in s.transactions.indices
        where s.transactions[i].isGroupPurchasers && s.transactions[i].expiresDate == end {
            s.transactions[i].additionalTransactionReason = "SEAT_ADDITION"
        }
        t.additionalTransactionReason = "SEAT_ADDITION"
        s.transactions.append(t)
        s.renewal?.renewalSeats = renewalSeats
        world.subscriptions[otid] = s
        try emit(
            "add \(count) seats",
            otid,
            v2: ("DID_CHANGE_RENEWAL_PREF", "INCREASE_QUANTITY"),
            v1: [],
            expectV2: ExpectedEvent(.seatsChanged, .increase),
            expectV1: []
        )
    }

    /// The purchaser reduces the group to `seats` seats from the next renewal: the renewal info says so now, the
    /// period keeps its seats, the renewal covers `seats`. V1 sends nothing.
    public mutating func reduceSeatsAtRenewal(_ otid: String, to seats: Int) throws {
        var s = try runningGroup(otid)
        guard seats > 0, let current = s.renewal?.renewalSeats, seats < current else {
            throw SimulatorError("bad_step", "\(otid): a reduction leaves one seat or more, fewer than now")
        }
        s.renewal?.renewalSeats = seats
        world.subscriptions[otid] = s
        try emit(
            "reduce to \(seats) seats at the next renewal",
            otid,
            v2: ("DID_CHANGE_RENEWAL_PREF", "DECREASE_QUANTITY"),
            v1: [],
            expectV2: ExpectedEvent(.seatsChanged, .decrease),
            expectV1: []
        )
    }

    /// Apple refunds `count` of the group's seats (fewer than it has: ``refundGroup(_:)`` refunds them all), taken from
    /// the period's newest transactions first: each gives its `revokedSeatQuantity`, and a revocation date only once
    /// every one of its seats is refunded. One `REFUND` / `SEATS` per transaction touched; the subscription goes on, and
    /// V1 sends nothing.
    public mutating func refundSeats(_ otid: String, _ count: Int) throws {
        var s = try runningGroup(otid)
        guard count > 0, count < s.groupSeats, let end = s.latest?.expiresDate else {
            throw SimulatorError("bad_step", "\(otid): a seat refund leaves one seat or more")
        }
        var left = count
        var touched: [Int] = []
        for i in s.transactions.indices.reversed()
        where left > 0 && s.transactions[i].isGroupPurchasers && s.transactions[i].expiresDate == end {
            let take = min(left, s.transactions[i].seatsLeft)
            guard take > 0 else { continue }
            s.transactions[i].revokedSeats = (s.transactions[i].revokedSeats ?? 0) + take
            if s.transactions[i].seatsLeft == 0 {
                s.transactions[i].revocationDate = now
                s.transactions[i].revocationReason = 1
                s.transactions[i].revocationType = "REFUND_FULL"
            }
            left -= take
            touched.insert(i, at: 0)
        }
        world.subscriptions[otid] = s
        for (n, i) in touched.enumerated() {
            try emit(
                "refund \(count) seats" + (touched.count > 1 ? " (transaction \(n + 1) of \(touched.count))" : ""),
                otid,
                v2: ("REFUND", "SEATS"),
                v1: [],
                expectV2: ExpectedEvent(.seatsRefunded),
                expectV1: [],
                transaction: s.transactions[i]
            )
        }
    }

    /// Apple refunds the group's whole period: every transaction of it gets a revocation date, auto-renew goes off.
    /// V2 tells each transaction with a `REFUND` of its own, oldest first (the purchaser's access ends once every one
    /// is revoked); V1 tells the subscription's refund once, with the last (`CANCEL` and `DID_CHANGE_RENEWAL_STATUS`,
    /// as for any refunded subscription). Members' transactions are left as they are.
    public mutating func refundGroup(_ otid: String) throws {
        var s = try runningGroup(otid)
        guard let end = s.latest?.expiresDate else { throw SimulatorError("bad_step", "\(otid) has no period") }
        let period = s.transactions.indices.filter {
            s.transactions[$0].isGroupPurchasers && s.transactions[$0].expiresDate == end
                && s.transactions[$0].revocationDate == nil
        }
        for i in period {
            s.transactions[i].revocationDate = now
            s.transactions[i].revocationReason = 1
            s.transactions[i].revocationType = "REFUND_FULL"
        }
        s.renewal?.autoRenew = false
        s.autoRenewChangedAt = now
        world.subscriptions[otid] = s
        for (n, i) in period.enumerated() {
            let last = n == period.count - 1
            try emit(
                "refund the whole group" + (period.count > 1 ? " (transaction \(n + 1) of \(period.count))" : ""),
                otid,
                v2: ("REFUND", nil),
                v1: last ? ["CANCEL", "DID_CHANGE_RENEWAL_STATUS"] : [],
                expectV2: ExpectedEvent(.refund),
                expectV1: last ? [ExpectedEvent(.refund), ExpectedEvent(.autoRenewChanged, .disabled)] : [],
                transaction: s.transactions[i]
            )
        }
    }

    /// A member joins the Apple-hosted group of `purchaser` (which must have a seat free: the purchaser holds one):
    /// a subscription of the member's own, its transaction `ASSIGNED`, ending with the group's period and repeating the
    /// group's seats and tiers; its renewal info repeats the group's. V1 tells it as a family-shared purchase.
    @discardableResult
    public mutating func memberJoins(_ purchaser: String) throws -> String {
        let group = try runningGroup(purchaser)
        guard let latest = group.latest, let end = latest.expiresDate, latest.invitationManagement == "APPLE",
            let product = Catalogue.product(latest.productID)
        else {
            throw SimulatorError("bad_step", "\(purchaser): members join a group whose invitations Apple hosts")
        }
        let members = world.subscriptions.values.filter {
            $0.transactions.first?.assignedBy == purchaser && $0.latest?.revocationDate == nil
        }
        guard members.count + 1 < group.groupSeats else {
            throw SimulatorError("bad_step", "\(purchaser) has no seat free")
        }
        let otid = world.newID()
        let tiers = product.seatTiers(group.groupSeats)
        var t = SimTransaction(
            transactionID: otid,
            originalTransactionID: otid,
            webOrderLineItemID: world.newID(),
            productID: latest.productID,
            purchaseDate: now,
            originalPurchaseDate: now,
            expiresDate: end,
            priceMilli: SimSeatTier.average(tiers) ?? product.priceMilli
        )
        (t.seats, t.seatTiers, t.invitationManagement, t.assignedBy) = (group.groupSeats, tiers, "APPLE", purchaser)
        var renewal = SimRenewal(autoRenewProductID: group.renewal?.autoRenewProductID ?? latest.productID)
        renewal.autoRenew = group.renewal?.autoRenew ?? true
        renewal.renewalSeats = group.renewal?.renewalSeats
        world.subscriptions[otid] = newSubscription(t, renewal: renewal)
        try emit(
            "a member joins the group",
            otid,
            v2: ("SUBSCRIBED", "INITIAL_BUY"),
            v1: ["INITIAL_BUY"],
            expectV2: ExpectedEvent(.purchase, .initial),
            expectV1: [ExpectedEvent(.purchase, .initial)]
        )
        return otid
    }

    /// The member `member` leaves the group (or the purchaser removes them): their transaction is revoked now,
    /// `revocationType` `ASSIGNMENT_REVOKE`. Both generations tell a `REVOKE`.
    public mutating func memberLeaves(_ member: String) throws {
        var s = try sub(member)
        guard let i = s.transactions.indices.last, s.transactions[i].assignedBy != nil,
            s.transactions[i].revocationDate == nil
        else {
            throw SimulatorError("bad_step", "\(member) is no member of a group")
        }
        s.transactions[i].revocationDate = now
        s.transactions[i].revocationType = "ASSIGNMENT_REVOKE"
        world.subscriptions[member] = s
        try emit(
            "the member leaves the group",
            member,
            v2: ("REVOKE", nil),
            v1: ["REVOKE"],
            expectV2: ExpectedEvent(.revocation),
            expectV1: [ExpectedEvent(.revocation)]
        )
    }

    /// Apple unclaims `count` seat claims of the developer-hosted group `otid` (after a seat refund, say): an
    /// `UNCLAIM_SEATS` with `unclaimInfo.unclaimSeatIds` and `data` about the purchaser's subscription. The claim ids
    /// stand for the developer's earlier Claim Seat answers. V1 sends nothing. Returns the ids.
    @discardableResult
    public mutating func unclaimSeats(_ otid: String, _ count: Int) throws -> [String] {
        let s = try runningGroup(otid)
        guard count > 0, s.latest?.invitationManagement == "DEVELOPER" else {
            throw SimulatorError("bad_step", "\(otid): Apple unclaims seats of a group whose invitations the app hosts")
        }
        let ids = (0..<count).map { Self.uuid("seat-claim|\(bundleID)|\(otid)|\(emissions.count)|\($0)") }
        try emit(
            "Apple unclaims \(count) seats",
            otid,
            v2: ("UNCLAIM_SEATS", nil),
            v1: [],
            expectV2: ExpectedEvent(.seatsUnclaimed),
            expectV1: [],
            unclaimSeatIDs: ids
        )
        return ids
    }

    /// The purchaser's subscription `otid` while its period runs with a transaction standing.
    func runningGroup(_ otid: String) throws -> SimSubscription {
        let s = try sub(otid)
        guard let end = s.latest?.expiresDate, end > now, s.groupPeriod.contains(where: { $0.revocationDate == nil })
        else {
            throw SimulatorError("bad_step", "\(otid) is no group purchaser's subscription in a running period")
        }
        return s
    }
}
