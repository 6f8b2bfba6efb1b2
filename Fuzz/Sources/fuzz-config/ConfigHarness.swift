import FuzzSupport
import Gateway
import RefundRequests

/// The gateway's config file: `GatewayConfig.parse(_:baseDirectory:)` on the raw bytes, then what start-up derives
/// from an accepted config (V1 apps and their secrets from the environment, the authority checks).
@main enum ConfigFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private let environment = [
    "EXAMPLE_APP_SHARED_SECRET": "0123456789abcdef0123456789abcdef",
    "MAIN_WEBHOOK_SECRET": "whsec_c2VjcmV0c2VjcmV0c2VjcmV0",
    "IAPGW_ADMIN_TOKEN": "token",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The same bytes as a team service's answer to a refund request: what is accepted reads back as itself, and an
    // answer read without consent is one the consent check finds final.
    let refusesConsent = ConsumptionSettings.refusesConsent(fromTeam: bytes)
    if let answer = ConsumptionSettings.answer(fromTeam: bytes) {
        let again = ConsumptionSettings.answer(fromTeam: ConsumptionSettings.encoded(answer))
        precondition(again == answer, "a consumption answer does not read back as itself")
        precondition(refusesConsent == !answer.customerConsented, "consent read two ways")
    }
    let config: GatewayConfig
    do {
        config = try GatewayConfig.parse(
            bytes,
            baseDirectory: "/nonexistent/fuzz"
        )
    } catch {
        if FuzzSupport.debugging { print("refused: \(error)") }
        return 0
    }
    if FuzzSupport.debugging { print("accepted: \(config.apps.count) apps, \(config.downstreams.count) downstreams") }
    _ = config.v1Apps(environment: environment)
    _ = config.hasAppStoreAPICredentials
    var effective: [(bundle: String, environment: String, authority: GatewayConfig.Authority)] = []
    for app in config.apps {
        for env in app.environments { effective.append((app.bundleID, env.rawValue, app.authority(for: env))) }
    }
    _ = config.authorityProblems(effective: effective, v2PathAvailable: false)
    _ = config.authorityProblems(effective: effective, v2PathAvailable: true)
    return 0
}
