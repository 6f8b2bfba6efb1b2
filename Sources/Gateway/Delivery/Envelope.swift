public import WireJSON

/// What a webhook downstream receives (docs/architecture.md), written by ``Envelope/body(authoritative:eventJSON:stateJSON:raw:)``:
/// `{"type": "subscription.event", "authoritative", "event", "state", "raw"?}` — the canonical event, whether it
/// comes from the bundle's authoritative generation, the subscription's current state on the authoritative path
/// (last-write-wins by event date: what downstream should act on when events arrive out of order; null for events
/// about no subscription), and Apple's body when the downstream asked for `include_raw`.
public enum Envelope {
    /// `raw` for a stored body: V2 as is, V1 with the `password` member removed.
    public static func rawBody(_ bytes: [UInt8]) -> JSONValue? {
        guard case .object(let o)? = try? JSONParser.parse(bytes) else { return nil }
        return .object(JSONObject(o.members.filter { $0.key != "password" }))
    }

    /// The webhook envelope around an event and state already stored as JSON: spliced, not decoded and re-encoded.
    public static func body(authoritative: Bool, eventJSON: [UInt8], stateJSON: [UInt8]?, raw: JSONValue?) -> [UInt8] {
        var w = JSONObjectWriter()
        w.string("type", "subscription.event")
        w.bool("authoritative", authoritative)
        w.raw("event", eventJSON)
        w.raw("state", stateJSON)
        if let raw { w.raw("raw", raw.canonicalBytes()) }
        return w.finish()
    }
}
