import Canonical
import FuzzSupport
import V1Adapter
import WireJSON

/// V1: the notification body (`V1Adapter.authenticate(body:)` with configured apps and secrets, then the event built
/// from the body) and Apple's verifyReceipt answer (`VerifyReceiptResponse` through `JSONValueDecoder`, then
/// `V1EventBuilder.facts(fromReceipt:)`, the event for a notification, and the outcome snapshots).
///
/// Input: a mode byte, then the bytes. Mode byte bit 0: 0 the rest is a notification body, 1 the rest is a
/// verifyReceipt answer; for answers, bits 1–4 pick the notification (of the synthetic fixtures) whose event it
/// completes. Invariants on an accepted body: the redacted body parses, holds the secret's marker as `password`, and
/// `V1Adapter.restore` gives back a body with the same members as the one received.
@main enum V1FuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private struct Setup: Sendable {
    let adapter: V1Adapter
    let secrets: [SharedSecret]
    /// The synthetic fixtures' notification bodies (each a different notification_type).
    let notifications: [ResponseBodyV1]

    init() {
        let gateway = [
            SharedSecret(name: "GATEWAY_SECRET", value: "0123456789abcdef0123456789abcdef"),
            SharedSecret(name: "GATEWAY_SECRET_OLD", value: "fedcba9876543210fedcba9876543210"),
        ]
        let educreations = [
            SharedSecret(name: "EDU_SECRET", value: "asdf"), SharedSecret(name: "EDU_SECRET_2", value: "asdfasdf"),
        ]
        let some = [SharedSecret(name: "SOME_SECRET", value: "********")]
        adapter = V1Adapter(apps: [
            V1App(bundleID: "com.example.gateway", environments: [.production, .sandbox], sharedSecrets: gateway),
            V1App(
                bundleID: "com.educreations.ios.Educreations",
                environments: [.production],
                sharedSecrets: educreations
            ),
            V1App(
                bundleID: "com.some.thing",
                environments: [.production, .sandbox],
                sharedSecrets: some,
                verifyReceipt: false
            ),
        ])
        secrets = gateway + educreations + some
        let names = [
            "cancel", "consumption-request", "did-change-renewal-pref", "did-change-renewal-status",
            "did-fail-to-renew",
            "did-recover", "did-renew", "initial-buy", "interactive-renewal", "price-increase-consent", "refund",
            "renewal", "revoke",
        ]
        notifications = names.map { name in
            do {
                return try JSONValueDecoder().decode(
                    ResponseBodyV1.self,
                    from: FuzzSupport.fixture("Fixtures/v1-synthetic/\(name).json")
                )
            } catch { fatalError("fuzz: Fixtures/v1-synthetic/\(name).json: \(error)") }
        }
    }
}

private let setup = Setup()
private let arrival: Int64 = 1_748_736_060_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    if mode & 1 == 0 {
        body(input.rest())
    } else {
        receipt(input.rest(), notification: setup.notifications[Int(mode >> 1) % setup.notifications.count])
    }
    return 0
}

private func body(_ bytes: [UInt8]) {
    _ = V1Adapter.passwordFingerprint(body: bytes)
    let n: AuthenticatedV1Notification
    do { n = try setup.adapter.authenticate(body: bytes) } catch {
        if FuzzSupport.debugging { print("refused: \(error)") }
        return
    }
    if FuzzSupport.debugging { print("accepted: \(n.body.notificationType ?? "?") \(n.bundleID) \(n.eventID)") }

    // The stored body: redacted, and restorable to what Apple sent.
    guard case .object(let redacted)? = try? JSONParser.parse(n.redactedBody) else {
        FuzzSupport.fail("the redacted body does not parse as an object")
    }
    guard redacted["password"] == .string(V1Adapter.secretMarker(n.secretName)) else {
        FuzzSupport.fail("the redacted body's password is not the secret's marker")
    }
    guard let restored = V1Adapter.restore(redactedBody: n.redactedBody, secrets: setup.secrets) else {
        FuzzSupport.fail("restore refused a body the adapter redacted")
    }
    guard (try? JSONParser.parse(restored)) == (try? JSONParser.parse(bytes)) else {
        FuzzSupport.fail("the restored body differs from the received one")
    }

    let facts = V1EventBuilder.facts(fromBody: n.body, subscription: n.body.subscriptionID)
    let event = V1EventBuilder().event(for: n.body, id: n.eventID, facts: facts, arrival: arrival)
    _ = event.id
}

private func receipt(_ bytes: [UInt8], notification: ResponseBodyV1) {
    let r: VerifyReceiptResponse
    do { r = try JSONValueDecoder().decode(VerifyReceiptResponse.self, from: bytes) } catch {
        if FuzzSupport.debugging { print("refused: \(error)") }
        return
    }
    if FuzzSupport.debugging { print("decoded: status \(r.statusCode.map(String.init) ?? "-")") }
    _ = r.statusCode
    let all = V1EventBuilder.facts(fromReceipt: r, subscription: nil)
    let subscription = notification.subscriptionID ?? all.transactions.last?.originalTransactionIDText
    let facts = V1EventBuilder.facts(fromReceipt: r, subscription: subscription)
    let event = V1EventBuilder().event(for: notification, id: "v1:fuzz", facts: facts, arrival: arrival)
    _ = event.id
    for t in all.transactions {
        _ = (t.purchaseMillis, t.originalPurchaseMillis, t.expiresMillis, t.cancellationMillis)
    }
    _ = V1EventBuilder.snapshots(from: r, observedAt: arrival)
}
