internal import Canonical
internal import Crypto
internal import Store
internal import V1Adapter
internal import WireJSON

/// The V1 shape of a journaled V2 notification (docs/architecture.md, "The V1 shape of a V2 notification"), as of the
/// notification's moment: its canonical event, the subscription's transactions known then (its events dated at or
/// before the notification's, newest first — never a later renewal, never only the oldest events of a long-lived
/// subscription), the latest receipt stored for it, and the app version the signed payload names. Its `password` is the
/// marker of the app's first shared secret: a pass-through delivery restores the secret, the V1 adapter reads it as
/// it is.
struct V1Shape: Sendable {
    /// The body, compact JSON.
    var body: [UInt8]
    /// Its `notification_type`.
    var type: String
    /// The receipt the body carries, when one is stored for the subscription.
    var receipt: StoredReceipt?
    /// When the V2 notification says the change happened (its `signedDate`): the V1 event's arrival, so that its
    /// entitlement is the V2 event's.
    var eventDate: Int64

    /// Nil when the notification's event is not stored (any more) or its type has no V1 counterpart.
    static func build(
        notificationKey: String,
        journalBody: [UInt8],
        secretName: String,
        assignedOwnership: String = V1App.defaultAssignedOwnership,
        in tx: any JournalTransaction & ComparisonTransaction
    ) throws -> V1Shape? {
        guard let event = try tx.events(id: notificationKey, originalTransactionID: nil, limit: 1).first?.event,
            let type = V1BodySynthesizer.v1NotificationType(for: event)
        else { return nil }
        var history: [CanonicalEvent] = []
        var receipt: StoredReceipt?
        if let otid = event.originalTransactionID, let bundle = event.bundleID, let environment = event.environment {
            history = try tx.subscriptionEvents(
                originalTransactionID: otid,
                through: event.eventDate,
                limit: V1BodySynthesizer.maxTransactions * 2
            )
            .map(\.event)
            .filter { $0.bundleID == bundle && $0.environment == environment && $0.id != event.id }
            receipt = try tx.receipt(
                of: SubscriptionKey(bundleID: bundle, environment: environment, originalTransactionID: otid)
            )
        }
        guard
            let body = V1BodySynthesizer.body(
                for: event,
                history: history,
                latestReceipt: receipt?.receipt,
                password: V1Adapter.secretMarker(secretName),
                bundleVersion: bundleVersion(journalBody),
                assignedOwnership: assignedOwnership
            )
        else { return nil }
        return V1Shape(body: body, type: type, receipt: receipt, eventDate: event.eventDate)
    }

    /// `data.bundleVersion` of a journaled V2 body's payload, read without verifying it again (it was verified when it
    /// was journaled).
    static func bundleVersion(_ journalBody: [UInt8]) -> String? {
        guard case .object(let outer)? = try? JSONParser.parse(journalBody),
            case .string(let token)? = outer["signedPayload"]
        else {
            return nil
        }
        let parts = Array(token.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = try? Base64.decode(parts[1], alphabet: .url),
            case .object(let payload)? = try? JSONParser.parse(bytes),
            case .object(let data)? = payload["data"]
        else { return nil }
        return data["bundleVersion"]?.stringValue
    }
}
