internal import Gateway
internal import WireJSON

/// `iap-gateway deliveries`: one event's deliveries and their logged attempts, as JSON
/// (``Operations/deliveryLog(eventID:)``, docs/operations.md, "The delivery log").
enum DeliveriesCommand: Command {
    static let name = "deliveries"
    static let usage = """
          iap-gateway deliveries --config FILE EVENT_ID
              One event's deliveries (and its notification's pass-through ones), each with its last 20 attempts,
              newest first: when, how long, the status or error, the first 1 KiB of the answer, whether a replay
              made it. An unknown event prints a JSON error and exits 1.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config"])
        guard let eventID = try a.positionals(atMost: 1, for: name).first else {
            throw CommandError.usage("deliveries needs an EVENT_ID")
        }
        let config = try a.config(for: name)
        let log = try withStore(config) { store in try store.operations.deliveryLog(eventID: eventID) }
        guard let log else {
            let error = JSONValue.object(
                JSONObject([("code", .string("not_found")), ("message", .string("no event \(eventID) is stored"))])
            )
            print(String(decoding: JSONValue.object(JSONObject([("error", error)])).canonicalBytes(), as: UTF8.self))
            return 1
        }
        print(String(decoding: log.canonicalBytes(), as: UTF8.self))
        return 0
    }
}
