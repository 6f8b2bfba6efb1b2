internal import Gateway
internal import ServiceKit

/// `iap-gateway replay`: queue deliveries again — one event, a time range, or every dead letter.
enum ReplayCommand: Command {
    static let name = "replay"
    static let usage = """
          iap-gateway replay --config FILE (--id EVENT_ID [--downstream NAME] | --since T [--until T] | --dead-letters)
              Queue deliveries again. Times are ISO-8601 or relative (7d, 12h). --downstream: the event to that
              downstream alone (the same webhook-id; its attempts are logged as replays).
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(
            arguments,
            valueFlags: ["config", "id", "since", "until", "downstream"],
            switchFlags: ["dead-letters"]
        )
        _ = try a.positionals(atMost: 0, for: name)
        let selection = try selection(a, now: WallClock.wallMillis())
        let downstream = a.value("downstream")
        let eventID: String? = if case .eventID(let id) = selection { id } else { nil }
        if downstream != nil, eventID == nil { throw CommandError.usage("replay: --downstream goes with --id") }
        let config = try a.config(for: name)
        let n = try withStore(config) { store in
            guard let id = eventID, let downstream else { return try store.operations.replay(selection) }
            do { return try store.operations.replay(eventID: id, downstream: downstream) } catch let unknown
                as Operations.UnknownDownstream
            {
                throw CommandError.usage("replay: \(unknown)")
            }
        }
        print("{\"requeued\":\(n)}")
        return 0
    }

    /// What to replay: exactly one of `--id`, `--since [--until]` (until: the end of time) and `--dead-letters`.
    static func selection(_ a: Arguments, now: Int64) throws(CommandError) -> Operations.ReplaySelection {
        let since = try a.time("since", now: now)
        let until = try a.time("until", now: now)
        let id = a.value("id")
        let deadLetters = a.has("dead-letters")
        if until != nil, since == nil { throw .usage("replay: --until needs --since") }
        switch [id != nil, since != nil, deadLetters].filter({ $0 }).count {
        case 0: throw .usage("replay needs --id, --since [--until] or --dead-letters")
        case 1: break
        default: throw .usage("replay takes only one of --id, --since [--until] and --dead-letters")
        }
        if let id { return .eventID(id) }
        if let since { return .range(since: since, until: until ?? Int64.max) }
        return .deadLetters
    }
}
