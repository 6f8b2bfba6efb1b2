import Canonical
import HTTPClient
import TestSupport
import Testing
import WireJSON

@testable import V2Adapter

/// Send Consumption Information: Apple's rules checked before anything is sent, the body as Apple's libraries send
/// it, and Apple's answers judged like every other call of the client.
@Suite struct ConsumptionInformationTests {
    typealias Info = ConsumptionInformation

    @Test(arguments: [
        (
            Info(customerConsented: false, deliveryStatus: .delivered, sampleContentProvided: false),
            Info.Problem.noConsent
        ),
        (
            Info(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: false,
                consumptionPercentage: 100_001
            ),
            .percentageOutOfRange
        ),
        (
            Info(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: false,
                consumptionPercentage: -1
            ),
            .percentageOutOfRange
        ),
        (
            Info(
                customerConsented: true,
                deliveryStatus: .undeliveredServerOutage,
                sampleContentProvided: false,
                consumptionPercentage: 500
            ),
            .percentageWithoutDelivery
        ),
        (
            Info(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: true,
                refundPreference: .grantProrated
            ),
            .proratedWithoutPercentage
        ),
        (
            Info(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: true,
                consumptionPercentage: 0,
                refundPreference: .grantProrated
            ),
            .proratedWithoutPercentage
        ),
    ])
    func whatAppleWouldRefuseIsRefusedHere(_ info: Info, _ problem: Info.Problem) {
        #expect(throws: problem) { try info.validated(for: .consumable) }
        #expect(throws: problem) { try info.validated(for: nil) }
    }

    /// Apple's rules for an auto-renewable subscription: no percentage (Apple works it out from the time elapsed), so
    /// its GRANT_PRORATED goes without one; the rules of every product still hold.
    @Test func aSubscriptionIsJudgedByItsOwnRules() throws {
        let prorated = Info(
            customerConsented: true,
            deliveryStatus: .delivered,
            sampleContentProvided: false,
            refundPreference: .grantProrated
        )
        #expect(try prorated.validated(for: .autoRenewable) == prorated)
        #expect(throws: Info.Problem.proratedWithoutPercentage) { try prorated.validated(for: .nonRenewing) }
        var withPercentage = prorated
        withPercentage.consumptionPercentage = 25_000
        #expect(try withPercentage.validated(for: .consumable) == withPercentage)
        #expect(throws: Info.Problem.percentageForSubscription) { try withPercentage.validated(for: .autoRenewable) }
        var noConsent = prorated
        noConsent.customerConsented = false
        #expect(throws: Info.Problem.noConsent) { try noConsent.validated(for: .autoRenewable) }
        var outOfRange = withPercentage
        outOfRange.consumptionPercentage = 100_001
        #expect(throws: Info.Problem.percentageOutOfRange) { try outOfRange.validated(for: .autoRenewable) }
    }

    @Test func aValidAnswerIsSentAsApplesLibrariesSendIt() async throws {
        let (client, transport, _) = try AppStoreAPIClientTests.scripted([
            .success(HTTPResponse(status: 202, headers: [], body: []))
        ])
        let info = Info(
            customerConsented: true,
            deliveryStatus: .delivered,
            sampleContentProvided: false,
            consumptionPercentage: 25_000,
            refundPreference: .grantProrated
        )
        try await client.sendConsumptionInformation(
            transactionID: "2000000123",
            info,
            productType: .consumable,
            environment: .sandbox
        )
        let request = try #require(transport.requests.first)
        #expect(request.method == .put)
        #expect(request.url == APIFixture.sandbox + "/inApps/v2/transactions/consumption/2000000123")
        #expect(request.headers.contains { $0.name == "Content-Type" && $0.value == "application/json" })
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"consumptionPercentage":25000,"customerConsented":true,"deliveryStatus":"DELIVERED","#
                + #""refundPreference":"GRANT_PRORATED","sampleContentProvided":false}"#
        )
        // Absent members are left out.
        let (minimalClient, minimal, _) = try AppStoreAPIClientTests.scripted([
            .success(HTTPResponse(status: 202, headers: [], body: []))
        ])
        try await minimalClient.sendConsumptionInformation(
            transactionID: "1",
            Info(customerConsented: true, deliveryStatus: .undeliveredOther, sampleContentProvided: true),
            productType: .autoRenewable,
            environment: .production
        )
        #expect(
            minimal.requests.first.map { String(decoding: $0.body, as: UTF8.self) }
                == #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":true}"#
        )
    }

    /// The client judges the answer for the purchase's product: a subscription's GRANT_PRORATED goes without a
    /// percentage; what Apple would refuse for the product never leaves (no HTTP status: Apple did not answer).
    @Test func theAnswerIsJudgedForThePurchasesProduct() async throws {
        let prorated = Info(
            customerConsented: true,
            deliveryStatus: .delivered,
            sampleContentProvided: false,
            refundPreference: .grantProrated
        )
        let (client, transport, _) = try AppStoreAPIClientTests.scripted([
            .success(HTTPResponse(status: 202, headers: [], body: []))
        ])
        try await client.sendConsumptionInformation(
            transactionID: "1",
            prorated,
            productType: .autoRenewable,
            environment: .sandbox
        )
        #expect(
            transport.requests.first.map { String(decoding: $0.body, as: UTF8.self) }
                == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","#
                + #""sampleContentProvided":false}"#
        )
        var withPercentage = prorated
        withPercentage.consumptionPercentage = 25_000
        let (refusing, refusingTransport, _) = try AppStoreAPIClientTests.scripted([])
        for (info, product, problem) in [
            (prorated, ProductType.consumable, "prorated_without_percentage"),
            (withPercentage, .autoRenewable, "percentage_for_subscription"),
        ] {
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await refusing.sendConsumptionInformation(
                        transactionID: "1",
                        info,
                        productType: product,
                        environment: .sandbox
                    )
                }
            )
            #expect(error.code == .badRequest && error.httpStatus == nil && error.message.contains(problem))
        }
        #expect(refusingTransport.requests.isEmpty)
    }

    @Test func anAnswerWithoutConsentIsNeverSent() async throws {
        let (client, transport, _) = try AppStoreAPIClientTests.scripted([])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await client.sendConsumptionInformation(
                    transactionID: "1",
                    Info(customerConsented: false, deliveryStatus: .delivered, sampleContentProvided: false),
                    productType: .consumable,
                    environment: .sandbox
                )
            }
        )
        #expect(error.code == .badRequest && error.message.contains("no_consent"))
        #expect(transport.requests.isEmpty)
    }

    @Test func applesRefusalIsFinalAndItsOutagesAreRetried() async throws {
        let valid = Info(customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false)
        let (refused, refusedTransport, _) = try AppStoreAPIClientTests.scripted([
            AppStoreAPIClientTests.appleError(400, 4_000_183)
        ])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await refused.sendConsumptionInformation(
                    transactionID: "1",
                    valid,
                    productType: nil,
                    environment: .sandbox
                )
            }
        )
        #expect(error.code == .badRequest && error.appleErrorCode == 4_000_183)
        #expect(refusedTransport.requests.count == 1)
        let (flaky, flakyTransport, _) = try AppStoreAPIClientTests.scripted([
            AppStoreAPIClientTests.appleError(500, 5_000_001),
            .success(HTTPResponse(status: 202, headers: [], body: [])),
        ])
        try await flaky.sendConsumptionInformation(transactionID: "1", valid, productType: nil, environment: .sandbox)
        #expect(flakyTransport.requests.count == 2)
    }
}
