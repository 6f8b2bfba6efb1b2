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
        #expect(throws: problem) { try info.validated() }
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
        try await client.sendConsumptionInformation(transactionID: "2000000123", info, environment: .sandbox)
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
            environment: .production
        )
        #expect(
            minimal.requests.first.map { String(decoding: $0.body, as: UTF8.self) }
                == #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":true}"#
        )
    }

    @Test func anAnswerWithoutConsentIsNeverSent() async throws {
        let (client, transport, _) = try AppStoreAPIClientTests.scripted([])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await client.sendConsumptionInformation(
                    transactionID: "1",
                    Info(customerConsented: false, deliveryStatus: .delivered, sampleContentProvided: false),
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
                try await refused.sendConsumptionInformation(transactionID: "1", valid, environment: .sandbox)
            }
        )
        #expect(error.code == .badRequest && error.appleErrorCode == 4_000_183)
        #expect(refusedTransport.requests.count == 1)
        let (flaky, flakyTransport, _) = try AppStoreAPIClientTests.scripted([
            AppStoreAPIClientTests.appleError(500, 5_000_001),
            .success(HTTPResponse(status: 202, headers: [], body: [])),
        ])
        try await flaky.sendConsumptionInformation(transactionID: "1", valid, environment: .sandbox)
        #expect(flakyTransport.requests.count == 2)
    }
}
