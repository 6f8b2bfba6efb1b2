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

    /// `GET /admin/deliveries` without `event`: one downstream's deliveries in one state, created at `since` or later
    /// (a time as for replay; the beginning when absent), from `cursor` on (a page's `next_cursor`).
    func deliveryPage(
        now: () -> Int64
    ) throws(GatewayError) -> (
        downstream: String, state: DeliveryState, cursor: DeliveryCursor, limit: Int
    ) {
        guard let downstream = parameters["downstream"], let stateText = parameters["status"] else {
            throw GatewayError(.badRequest, "give event, or downstream and status (pending, delivered or dead)")
        }
        guard let state = DeliveryState(rawValue: stateText) else {
            throw GatewayError(.badRequest, "status is pending, delivered or dead")
        }
        var cursor = DeliveryCursor.since(Int64.min)
        if let sinceText = parameters["since"] {
            guard let since = TimeText.milliseconds(sinceText, now: now()) else {
                throw GatewayError(.badRequest, "since is not a time (ISO-8601, 7d, 12h or epoch ms)")
            }
            cursor = .since(since)
        }
        if let text = parameters["cursor"] {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let createdAt = Int64(parts[0]), let id = Int64(parts[1]) else {
                throw GatewayError(.badRequest, "cursor is a page's next_cursor")
            }
            // A cursor before `since` starts at `since`.
            if createdAt >= cursor.createdAt { cursor = DeliveryCursor(createdAt: createdAt, id: id) }
        }
        return (downstream, state, cursor, try limit(maximum: 1_000))
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
    func replaySelection(now: () -> Int64) throws(GatewayError) -> Operations.ReplaySelection {
        if let id = try eventID() { return .eventID(id) }
        if parameters["dead_letters"] != nil { return .deadLetters }
        guard let sinceText = parameters["since"] else {
            throw GatewayError(.badRequest, "give id, since[/until] or dead_letters")
        }
        let time = now()
        guard let since = TimeText.milliseconds(sinceText, now: time) else {
            throw GatewayError(.badRequest, "since is not a time (ISO-8601, 7d, 12h or epoch ms)")
        }
        var until = Int64.max
        if let untilText = parameters["until"] {
            guard let u = TimeText.milliseconds(untilText, now: time) else {
                throw GatewayError(.badRequest, "until is not a time (ISO-8601, 7d, 12h or epoch ms)")
            }
            until = u
        }
        return .range(since: since, until: until)
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

    /// `GET /admin/report`'s `since` (a time as for replay); `window` before `now` when absent or not a time.
    func reportSince(now: Int64, window: Int64) -> Int64 {
        parameters["since"].flatMap { TimeText.milliseconds($0, now: now) } ?? now - window
    }
}
