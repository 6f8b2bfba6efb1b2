internal import Canonical
internal import V1Adapter
internal import WireJSON

/// The V1 half of `verify`: the shared-secret check, then events from the body (offline, `verified: false`) or
/// from Apple's verifyReceipt answer when a client is given.
struct V1Verification: Sendable {
    var apps: [V1App] = []
    /// Config secrets whose environment variable is unset: (bundle, variable name).
    var unresolvedSecrets: [(bundle: String, variable: String)] = []
    var adHocSecret: SharedSecret?
    var bundleOverride: String?
    var environmentsOverride: Set<AppStoreEnvironment>?
    var receiptClient: VerifyReceiptClient?

    init(receiptClient: VerifyReceiptClient?) { self.receiptClient = receiptClient }

    func verify(_ bytes: [UInt8], now: Int64) async -> VerifyReport {
        var apps = self.apps
        if let secret = adHocSecret {
            // --shared-secret-env: the secret is accepted for the body's own bundle (or --bundle-id's).
            let claimed = bundleOverride ?? V1Adapter.claimedBundle(body: bytes) ?? ""
            apps.removeAll { $0.bundleID == claimed }
            apps.append(
                V1App(
                    bundleID: claimed,
                    environments: environmentsOverride ?? [.production, .sandbox],
                    sharedSecrets: [secret],
                    verifyReceipt: receiptClient != nil
                )
            )
        }
        let n: AuthenticatedV1Notification
        do { n = try V1Adapter(apps: apps).authenticate(body: bytes) } catch {
            // The password may be the secret whose variable is unset: say that rather than "bad secret".
            if error.code == .badSharedSecret, let bundle = V1Adapter.claimedBundle(body: bytes),
                let missing = unresolvedSecrets.first(where: { $0.bundle == bundle })
            {
                return .failure(
                    "config_error",
                    "environment variable \(missing.variable) (a shared secret of \(bundle)) is not set"
                )
            }
            return .failure(error.code.rawValue, error.reason)
        }
        let builder = V1EventBuilder()
        var report = VerifyReport(
            ok: true,
            version: Generation.v1.rawValue,
            kind: "notification",
            bundleID: n.bundleID,
            environment: n.environment,
            leafSerial: nil,
            signedDate: nil,
            events: []
        )
        report.eventID = n.eventID
        report.secretName = n.secretName
        let subscription = n.body.subscriptionID
        guard let client = receiptClient, n.app.verifyReceipt else {
            let facts = V1EventBuilder.facts(fromBody: n.body, subscription: subscription)
            report.events = [builder.event(for: n.body, id: n.eventID, facts: facts, arrival: now)]
            return report
        }
        guard let receipt = n.body.receiptData,
            let secret = n.app.sharedSecrets.first(where: { $0.name == n.secretName })
        else {
            return .failure("receipt_invalid", "the body carries no receipt to verify")
        }
        do {
            let answer = try await client.verify(receiptData: receipt, sharedSecret: secret)
            let facts = V1EventBuilder.facts(fromReceipt: answer.response, subscription: subscription)
            guard !facts.transactions.isEmpty else {
                return .failure("receipt_invalid", "Apple's answer does not contain the notification's subscription")
            }
            report.appleStatus = answer.status
            report.events = [builder.event(for: n.body, id: n.eventID, facts: facts, arrival: now)]
            report.snapshots = V1EventBuilder.snapshots(from: answer.response, observedAt: now)
            return report
        } catch {
            var failure = VerifyReport.failure(error.code.rawValue, error.reason)
            failure.appleStatus = error.appleStatus
            return failure
        }
    }

    /// A saved verifyReceipt answer: what it says per subscription, observed at its request date (else now).
    static func snapshots(_ object: JSONObject, now: Int64) -> VerifyReport {
        let response: VerifyReceiptResponse
        do { response = try JSONValueDecoder().decode(VerifyReceiptResponse.self, from: .object(object)) } catch {
            return .failure("malformed_body", "not a verifyReceipt answer")
        }
        let observed = response.receipt?.requestDateMs?.int64 ?? now
        var report = VerifyReport(
            ok: true,
            version: Generation.v1.rawValue,
            kind: "verify_receipt_response",
            bundleID: nil,
            environment: nil,
            leafSerial: nil,
            signedDate: nil,
            events: []
        )
        report.appleStatus = response.statusCode
        report.snapshots = V1EventBuilder.snapshots(from: response, observedAt: observed)
        report.bundleID = report.snapshots?.first?.bundleID
        report.environment =
            report.snapshots?.first?.environment ?? response.environment.flatMap(AppStoreEnvironment.init(appleValue:))
        return report
    }
}
