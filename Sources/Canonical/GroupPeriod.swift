/// A group (multiseat) subscription's period as its purchaser's transactions say it (docs/architecture.md, "Group
/// subscriptions"). Apple represents one period by one transaction, or — once the purchaser adds seats — by several,
/// each marked `seat_addition`, each covering its own seats; a seat refund revokes some seats of one or more of them
/// (`revoked_seats`) and gives a transaction a revocation date only once all its seats are gone. So:
///
/// - the period's seats are Σ `quantity` − Σ `revoked_seats` over the purchaser's transactions of the period (those
///   of the subscription that end when it ends), each as its newest view says — a transaction with a revocation
///   date counts none, whether or not Apple gave its revoked seats; members' (`assigned`) transactions repeat the
///   purchaser's seat data and are never counted;
/// - the purchaser loses access only when every transaction of the period carries a revocation: a transaction whose
///   seats were all refunded leaves the purchaser entitled while another transaction of the period stands;
/// - the seats at the next renewal are the newest renewal info's.
public struct GroupPeriod: Sendable, Hashable {
    public var seats: Int
    /// Every transaction of the period carries a revocation date.
    public var allRevoked: Bool
    public var renewalSeats: Int?

    public init(seats: Int, allRevoked: Bool, renewalSeats: Int?) {
        (self.seats, self.allRevoked, self.renewalSeats) = (seats, allRevoked, renewalSeats)
    }

    /// Whether `event` is about a group purchaser's transaction: the events this type settles.
    public static func isPurchasers(_ event: CanonicalEvent) -> Bool {
        event.isMultiSeat && event.ownership != "assigned" && event.transactionID != nil
            && event.originalTransactionID != nil && event.expiresDate != nil
    }

    /// Whether `event` revokes seats or a transaction of a group period whose purchaser keeps access: a seat refund,
    /// or the revocation of one of the period's transactions while another stands (as ``settle(_:earlier:)`` decided
    /// it). Never a cancellation of the subscription: V1 had no word for it (docs/architecture.md, "Group
    /// subscriptions").
    public static func isPartialRevocation(_ event: CanonicalEvent) -> Bool {
        guard isPurchasers(event) || event.kind == .seatsRefunded else { return false }
        if event.kind == .seatsRefunded { return true }
        return event.revocationDate != nil && event.entitlement.map { $0.state != .revoked } ?? false
    }

    /// Whether `event` is about what V1 never had a word for — a group's seats (a seat change, a seat refund or unclaim,
    /// a partial revocation) or a group member's own transaction (`assigned`: V1 knew only purchasers and family
    /// sharing, and whether Apple's V1 tells of members at all is not documented): never a difference between the two
    /// generations, so the comparison leaves it out.
    public static func isBeyondV1(_ event: CanonicalEvent) -> Bool {
        event.kind == .seatsChanged || event.kind == .seatsRefunded || event.kind == .seatsUnclaimed
            || event.ownership == "assigned" || isPartialRevocation(event)
    }

    /// The period of `event`'s transaction, from `event` and the subscription's `earlier` events (any order; other
    /// subscriptions', members' and other periods' are ignored); nil when `event` is not a purchaser's.
    public static func of(_ event: CanonicalEvent, earlier: [CanonicalEvent]) -> GroupPeriod? {
        guard isPurchasers(event), let end = event.expiresDate else { return nil }
        var views: [String: CanonicalEvent] = [:]
        var renewal: (date: Int64, seats: Int)?
        for e in earlier + [event] where e.originalTransactionID == event.originalTransactionID {
            if let seats = e.renewalQuantity, renewal.map({ e.eventDate >= $0.date }) ?? true {
                renewal = (e.eventDate, seats)
            }
            guard e.ownership != "assigned", e.expiresDate == end, let id = e.transactionID else { continue }
            // The newest view of each transaction; on a tie the later one (the event itself is last).
            if let seen = views[id], seen.eventDate > e.eventDate { continue }
            views[id] = e
        }
        var seats = 0
        for view in views.values where view.revocationDate == nil {
            seats = seats.clampedAdding(max(0, (view.quantity ?? 1).clampedSubtracting(view.revokedSeats ?? 0)))
        }
        return GroupPeriod(
            seats: seats,
            allRevoked: views.values.allSatisfy { $0.revocationDate != nil },
            renewalSeats: renewal?.seats
        )
    }

    /// `event` as its period decides it: its `group_seats`, its `renewal_quantity` when it carries none (the newest
    /// the subscription has), and its entitlement — computed as if its transaction were not revoked while another
    /// transaction of the period stands. Any other event is returned as it is.
    public static func settle(_ event: CanonicalEvent, earlier: [CanonicalEvent]) -> CanonicalEvent {
        guard let period = of(event, earlier: earlier) else { return event }
        var settled = event
        settled.groupSeats = period.seats
        settled.renewalQuantity = event.renewalQuantity ?? period.renewalSeats
        if event.revocationDate != nil, !period.allRevoked, event.entitlement != nil {
            settled.entitlement = Entitlement.compute(
                expiresDate: event.expiresDate,
                revocationDate: nil,
                gracePeriodExpiresDate: event.gracePeriodExpiresDate,
                inBillingRetry: event.inBillingRetry,
                at: event.eventDate
            )
        }
        return settled
    }
}
