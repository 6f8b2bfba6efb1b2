public import Canonical

/// The V1 path's event of a V2 notification that stands alone under V1 authority (docs/architecture.md, "One
/// authoritative event per notification"): its id, and the event where V1 has no counterpart for the type.
public enum V1View {
    /// `v1-view:` and the notification's key (its UUID): one per notification, whichever instance stores it.
    public static func eventID(notificationKey: String) -> String { "v1-view:" + notificationKey }

    /// The V2 event itself, on the V1 path.
    public static func event(of v2Event: CanonicalEvent, notificationKey: String) -> CanonicalEvent {
        var event = v2Event
        event.id = eventID(notificationKey: notificationKey)
        event.source = .v1
        return event
    }
}
