import ServiceKit
import Testing

@testable import Gateway

/// The code a job keeps when the store failed is one word across the gateway: the notification endpoint's and the
/// switch's refusals say it as the workers' rows do (docs/operations.md, "What `last_error` says").
@Suite struct OutcomeCodeTests {
    @Test func theStoresFailureIsOneCodeEverywhere() {
        #expect(GatewayError.Code.storeUnavailable.rawValue == OutcomeCode.storeUnavailable.rawValue)
        #expect(MigrationError.Code.storeUnavailable.rawValue == OutcomeCode.storeUnavailable.rawValue)
    }

    @Test func aDeliverysCodesAreSnakeCaseWithoutProse() {
        let codes: [OutcomeCode] = [
            .downstreamUnconfigured, .requestUnbuildable, .databaseUnconfigured, .databaseError, .http(503),
            .storeUnavailable, .notConfigured,
        ]
        for code in codes {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "\(code)")
        }
        #expect(OutcomeCode.http(503).rawValue == "http_503")
    }
}
