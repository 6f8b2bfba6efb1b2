internal import Gateway

/// `iap-gateway subscription`: one subscription's state per path and its event history, as JSON, within the caps of
/// ``Operations/subscription(_:maxEvents:maxBytes:)`` (docs/commands.md, "subscription").
enum SubscriptionCommand: Command {
    static let name = "subscription"
    static let usage = """
          iap-gateway subscription --config FILE ORIGINAL_TRANSACTION_ID
              One subscription's state per path and its event history, oldest first: at most 100,000 events
              and 8 MiB of stored JSON ("complete": false and "stopped_by" when a cap cut it short); a state or
              event whose stored value is damaged shows its "damaged" code instead.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config"])
        guard let otid = try a.positionals(atMost: 1, for: name).first else {
            throw CommandError.usage("subscription needs an ORIGINAL_TRANSACTION_ID")
        }
        let config = try a.config(for: name)
        let bytes = try withStore(config) { store in try store.operations.subscription(otid).canonicalBytes() }
        print(String(decoding: bytes, as: UTF8.self))
        return 0
    }
}
