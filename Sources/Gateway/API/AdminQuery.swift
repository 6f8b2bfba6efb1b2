internal import Canonical
internal import Store

/// The admin API's query parameters, read and checked: a value that is present but wrong is a `bad_request`
/// ``GatewayError`` whose message names the parameter and the forms it takes.
struct AdminQuery: Sendable {
    let parameters: [String: String]

    init(_ parameters: [String: String]) { self.parameters = parameters }

    subscript(name: String) -> String? { parameters[name] }

    /// `limit`: 100 when absent; an integer from 1 to `maximum` (the endpoint's, as the OpenAPI document says: 10,000
    /// for lists, 1,000 for a page of deliveries or refund requests), else a `bad_request` — never clamped or
    /// defaulted in silence, so `limit=1e6` or `limit=ten` is not taken for something it does not say.
    func limit(maximum: Int) throws(GatewayError) -> Int {
        guard let text = parameters["limit"] else { return 100 }
        guard let n = Int(text), (1...maximum).contains(n) else {
            throw GatewayError(.badRequest, "limit is an integer from 1 to \(maximum)")
        }
        return n
    }

    /// `GET /admin/deliveries`: `event` (one event's log), else one downstream's deliveries in one state, created at
    /// `since` or later (a time as for replay; the beginning when absent), from `cursor` on (a page's `next_cursor`).
    /// Every parameter given is checked, even one `event` leaves unused.
    func deliverySelection(now: () -> Int64) throws(GatewayError) -> DeliverySelection {
        let state = try parameters["status"].map { (text) throws(GatewayError) -> DeliveryState in
            guard let state = DeliveryState(rawValue: text) else {
                throw GatewayError(.badRequest, "status is pending, delivered or dead")
            }
            return state
        }
        var cursor = DeliveryCursor.since(Int64.min)
        if let since = try time("since", now: now()) { cursor = .since(since) }
        if let text = parameters["cursor"] {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let createdAt = Int64(parts[0]), let id = Int64(parts[1]) else {
                throw GatewayError(.badRequest, "cursor is a page's next_cursor")
            }
            // A cursor before `since` starts at `since`.
            if createdAt >= cursor.createdAt { cursor = DeliveryCursor(createdAt: createdAt, id: id) }
        }
        let limit = try limit(maximum: 1_000)
        if let event = parameters["event"] {
            guard !event.isEmpty else { throw GatewayError(.badRequest, "event is an event id") }
            return .event(event)
        }
        guard let downstream = parameters["downstream"], let state else {
            throw GatewayError(.badRequest, "give event, or downstream and status (pending, delivered or dead)")
        }
        return .page(downstream: downstream, state: state, cursor: cursor, limit: limit)
    }

    enum DeliverySelection: Equatable {
        case event(String)
        case page(downstream: String, state: DeliveryState, cursor: DeliveryCursor, limit: Int)
    }

    /// `POST /admin/replay`'s `downstream`: the one downstream to send `id` to again; nil when absent.
    func replayDownstream() throws(GatewayError) -> (eventID: String, downstream: String)? {
        guard let downstream = parameters["downstream"] else { return nil }
        guard let id = try eventID() else { throw GatewayError(.badRequest, "downstream goes with id") }
        return (id, downstream)
    }

    /// `id` of a replay: an event id, never empty (no event has it: an empty one is a mistake, not a selection).
    func eventID() throws(GatewayError) -> String? {
        guard let id = parameters["id"] else { return nil }
        guard !id.isEmpty else { throw GatewayError(.badRequest, "id is an event id") }
        return id
    }

    /// `POST /admin/replay`: `id`, else `dead_letters`, else `since` with an optional `until` (no end when absent).
    /// Times are ISO-8601, an age (`7d`, `12h`) or epoch milliseconds; `now` is read only when a time is given.
    /// Every parameter given is checked, even one the selection leaves unused: a malformed one is a mistake.
    func replaySelection(now: () -> Int64) throws(GatewayError) -> Operations.ReplaySelection {
        let id = try eventID()
        let time = parameters["since"] != nil || parameters["until"] != nil ? now() : 0
        let since = try self.time("since", now: time)
        let until = try self.time("until", now: time)
        if let id { return .eventID(id) }
        if parameters["dead_letters"] != nil { return .deadLetters }
        guard let since else { throw GatewayError(.badRequest, "give id, since[/until] or dead_letters") }
        return .range(since: since, until: until ?? Int64.max)
    }

    /// A time parameter (ISO-8601, an age, epoch milliseconds), nil when absent; `now` is read only when it is given.
    private func time(_ name: String, now: @autoclosure () -> Int64) throws(GatewayError) -> Int64? {
        guard let text = parameters[name] else { return nil }
        guard let milliseconds = TimeText.milliseconds(text, now: now()) else {
            throw GatewayError(.badRequest, "\(name) is not a time (ISO-8601, 7d, 12h or epoch ms)")
        }
        return milliseconds
    }

    /// `lane`: `untrusted` or `genuine`; nil when absent.
    func lane() throws(GatewayError) -> QuarantineRecord.Lane? {
        guard let text = parameters["lane"] else { return nil }
        guard let lane = QuarantineRecord.Lane(rawValue: text) else {
            throw GatewayError(.badRequest, "lane is untrusted or genuine")
        }
        return lane
    }

    /// `GET /admin/refund-requests`: an optional `state` (pending, sent, declined, …).
    func refundRequestState() throws(GatewayError) -> ConsumptionState? {
        guard let text = parameters["state"] else { return nil }
        guard let state = ConsumptionState(rawValue: text) else {
            let allowed = ConsumptionState.allCases.map(\.rawValue).joined(separator: ", ")
            throw GatewayError(.badRequest, "state is one of \(allowed)")
        }
        return state
    }

    /// `POST /admin/quarantine/replay`: an optional `lane`, then an optional `id` (a quarantine row id).
    func quarantineSelection() throws(GatewayError) -> Operations.QuarantineSelection {
        var selection = Operations.QuarantineSelection()
        selection.lane = try lane()
        if let text = parameters["id"] {
            guard let id = Int64(text) else { throw GatewayError(.badRequest, "id is a row id") }
            selection.id = id
        }
        return selection
    }

    /// `GET /admin/report`'s `since` (a time as for replay); `window` before `now` when absent. A `since` that is not a
    /// time is a `bad_request`: a report over another window than the one asked would read as an answer.
    func reportSince(now: Int64, window: Int64) throws(GatewayError) -> Int64 {
        try time("since", now: now) ?? now - window
    }
}
