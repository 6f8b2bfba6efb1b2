internal import Canonical

/// Every lifecycle the simulator plays, in the order `simulate list` prints them. Each states where its
/// subscriptions stand when the story ends, and — where Apple's V1 notifications cannot know it — where V1 traffic
/// leaves them and why.
public enum Lifecycles {
    public static func named(_ name: String) -> Lifecycle? { (all + byNameOnly).first { $0.name == name } }

    /// Lifecycles played by name only, outside ``all`` (and so outside every-lifecycle runs and the tests over every
    /// lifecycle): when a refunded consumable's notifications are lost, nothing the gateway's recovery reads brings the
    /// refund back (Apple's subscription statuses know no consumables), so recovery runs over them cannot end where
    /// Apple does.
    public static let byNameOnly: [Lifecycle] = [
        Lifecycle(
            "refund-request-consumable",
            "buy 100 coins; the customer asks for a refund; Apple waits for consumption information, then refunds or declines",
            final: [.revoked]
        ) { c in
            let s = try c.buy(Catalogue.coins)
            c.advance(months: 0.1)
            try c.refundRequest(s)
        }
    ]

    public static let all: [Lifecycle] = [
        Lifecycle("initial-buy", "buy a monthly subscription", final: [.active]) { c in
            try c.buy(Catalogue.monthly)
        },
        Lifecycle(
            "initial-buy-free-trial",
            "start a one-week free trial, which converts into a paid month",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly, offer: .freeTrial)
            try c.renew(s)
        },
        Lifecycle(
            "initial-buy-intro-offer",
            "buy at an introductory price, then renew at the full price",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly, offer: .introPrice)
            try c.renew(s)
        },
        Lifecycle("offer-code-buy", "buy with an offer code", final: [.active]) { c in
            try c.buy(Catalogue.monthly, offer: .offerCode("SPRING"))
        },
        Lifecycle("auto-renew", "buy, then renew twice automatically", final: [.active]) { c in
            let s = try c.buy(Catalogue.monthly)
            try c.renew(s)
            try c.renew(s)
        },
        Lifecycle(
            "auto-renew-off-then-expiry",
            "turn auto-renew off mid-period; the subscription expires at its end",
            final: [.expired]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.4)
            try c.setAutoRenew(s, on: false)
            try c.expire(s, .voluntary)
            c.advance(months: 0.1)
        },
        Lifecycle(
            "auto-renew-off-then-on",
            "turn auto-renew off, then on again before the period ends; it renews",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.3)
            try c.setAutoRenew(s, on: false)
            c.advance(months: 0.3)
            try c.setAutoRenew(s, on: true)
            try c.renew(s)
        },
        Lifecycle(
            "billing-grace-recovery",
            "the renewal fails, the grace period starts, billing recovers within it",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            try c.billingFailure(s, grace: true)
            c.advance(months: 0.1)
            try c.recover(s)
        },
        Lifecycle(
            "billing-grace-expired-retry-expired",
            "the renewal fails, the grace period ends unpaid, billing retry gives up: expired",
            final: [.expired]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            try c.billingFailure(s, grace: true)
            try c.gracePeriodExpired(s)
            c.advance(months: 0.5)
            try c.expire(s, .billingRetry)
        },
        Lifecycle(
            "billing-retry-recovery",
            "the renewal fails without a grace period, then billing recovers",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            try c.billingFailure(s, grace: false)
            c.advance(months: 0.2)
            try c.recover(s)
        },
        Lifecycle(
            "upgrade",
            "upgrade from monthly to premium mid-period: immediate, the rest of the month refunded pro rata",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.5)
            try c.upgrade(s, to: Catalogue.premium)
        },
        Lifecycle("downgrade", "downgrade from premium to monthly: takes effect at the next renewal", final: [.active])
        { c in
            let s = try c.buy(Catalogue.premium)
            c.advance(months: 0.5)
            try c.changeAtNextRenewal(s, to: Catalogue.monthly)
            try c.renew(s)
        },
        Lifecycle(
            "crossgrade",
            "switch from monthly to quarterly (same level, another duration): at the next renewal",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.5)
            try c.changeAtNextRenewal(s, to: Catalogue.quarterly)
            try c.renew(s)
        },
        Lifecycle("resubscribe-after-expiry", "let the subscription expire, then buy it again", final: [.active]) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.5)
            try c.setAutoRenew(s, on: false)
            try c.expire(s, .voluntary)
            c.advance(months: 0.5)
            try c.resubscribe(s)
        },
        Lifecycle("refund", "Apple refunds the subscription: access ends at once", final: [.revoked]) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.refund(s)
        },
        Lifecycle(
            "refund-declined",
            "the customer asks for a refund, Apple declines: access continues",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.refundDeclined(s)
        },
        Lifecycle(
            "refund-reversed",
            "Apple refunds, then reverses the refund: access is back",
            final: [.active],
            v1Final: [.revoked],
            v1Gap: "V1 has no REFUND_REVERSED notification: V1 traffic alone leaves the subscription revoked"
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.refund(s)
            c.advance(months: 0.1)
            try c.refundReversed(s)
        },
        Lifecycle(
            "family-revoke",
            "the family organizer stops sharing: the member's access is revoked",
            final: [.revoked]
        ) { c in
            let s = try c.buy(Catalogue.monthly, familyShared: true)
            c.advance(months: 0.3)
            try c.revokeFamilySharing(s)
        },
        Lifecycle(
            "price-increase-accepted",
            "a price increase needs consent; the customer accepts; it renews",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.priceIncrease(s)
            c.advance(months: 0.2)
            try c.acceptPriceIncrease(s)
            try c.renew(s)
        },
        Lifecycle(
            "price-increase-expired",
            "a price increase needs consent; the customer never answers: it expires",
            final: [.expired]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.priceIncrease(s)
            try c.expire(s, .priceIncrease)
            c.advance(months: 0.1)
        },
        Lifecycle(
            "renewal-extension",
            "the developer extends the renewal date by 10 days; the story ends after the original date",
            final: [.active],
            v1Final: [.expired],
            v1Gap:
                "V1 sends nothing for a renewal-date extension: V1 traffic alone believes the period ended on the original date"
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.5)
            try c.extendRenewalDate(s, days: 10)
            c.advance(months: 0.6)
        },
        Lifecycle(
            "product-removed-from-sale",
            "the product is removed from sale: the subscription expires at the period's end",
            final: [.expired]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            try c.expire(s, .productNotForSale)
            c.advance(months: 0.1)
        },
        Lifecycle(
            "consumable-consumption-request",
            "buy 100 coins; the customer asks for a refund; Apple asks for consumption data",
            final: [.active]
        ) { c in
            let s = try c.buy(Catalogue.coins)
            c.advance(months: 0.1)
            try c.consumptionRequest(s)
        },
        // Waits (bounded) for the gateway's consumption information before Apple decides; the final state is Apple's
        // decision alone (REFUND), what a gateway that does not answer gets.
        Lifecycle(
            "refund-request",
            "buy a monthly subscription; the customer asks for a refund; Apple waits for consumption information, then refunds or declines",
            final: [.revoked]
        ) { c in
            let s = try c.buy(Catalogue.monthly)
            c.advance(months: 0.2)
            try c.refundRequest(s)
        },
        // Group (multiseat) subscriptions (docs/simulator.md, "Group subscriptions"): V1 tells the purchaser's
        // subscription as any other and nothing of its seats, so both generations end alike.
        Lifecycle(
            "group-buy",
            "buy 8 seats of a team subscription (5 at 9.99, 3 at 7.99), renewed for 8",
            final: [.active]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 8)
            try c.renew(s)
        },
        Lifecycle(
            "group-add-seats",
            "buy 5 seats, add 3 mid-period (a transaction of their own), renew for 8",
            final: [.active]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 5)
            c.advance(months: 0.4)
            try c.addSeats(s, 3)
            try c.renew(s)
        },
        Lifecycle(
            "group-reduce-at-renewal",
            "buy 8 seats, reduce to 5 from the next renewal, renew for 5",
            final: [.active]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 8)
            c.advance(months: 0.5)
            try c.reduceSeatsAtRenewal(s, to: 5)
            try c.renew(s)
        },
        Lifecycle(
            "group-seat-refund",
            "buy 8 seats; Apple refunds 3 of them: the purchaser keeps access with 5",
            final: [.active]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 8)
            c.advance(months: 0.3)
            try c.refundSeats(s, 3)
        },
        Lifecycle(
            "group-whole-refund",
            "buy 5 seats, add 3; Apple refunds the whole period (every transaction of it): access ends",
            final: [.revoked]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 5)
            c.advance(months: 0.3)
            try c.addSeats(s, 3)
            c.advance(months: 0.2)
            try c.refundGroup(s)
        },
        Lifecycle(
            "group-member-joins-and-leaves",
            "buy 5 seats (Apple hosts the invitations); a member joins with a transaction of their own, then leaves",
            final: [.active, .revoked]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 5)
            c.advance(months: 0.2)
            let member = try c.memberJoins(s)
            c.advance(months: 0.3)
            try c.memberLeaves(member)
        },
        Lifecycle(
            "group-unclaim",
            "buy 5 seats (the app hosts the invitations); Apple refunds 2 and unclaims 2 of the app's seat claims",
            final: [.active]
        ) { c in
            let s = try c.buyGroup(Catalogue.team, seats: 5, invitations: "DEVELOPER")
            c.advance(months: 0.3)
            try c.refundSeats(s, 2)
            try c.unclaimSeats(s, 2)
        },
    ]

    /// The group (multiseat) subscriptions of ``all``.
    public static var groups: [Lifecycle] { all.filter { $0.name.hasPrefix("group-") } }
}
