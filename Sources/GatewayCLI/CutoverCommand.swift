internal import Gateway
internal import ServiceKit
internal import WireJSON

/// `iap-gateway cutover`: make V2 (or V1 again) authoritative for a bundle's new notifications.
enum CutoverCommand: Command {
    static let name = "cutover"
    static let usage = """
          iap-gateway cutover --config FILE BUNDLE [--environment E] (--to v2|v1 | --receipts api|shadow|apple)
                              [--reason TEXT] [--force]
              --to: make V2 (or V1 again) authoritative for BUNDLE's new notifications. --receipts: answer BUNDLE's
              verifyReceipt requests from the App Store Server API (api), with Apple's answer compared (shadow), or by
              Apple (apple). Stored, logged with who and why. V2 and api need a ready verdict unless --force; the
              way back is always allowed.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(
            arguments,
            valueFlags: ["config", "environment", "to", "receipts", "reason"],
            switchFlags: ["force"]
        )
        guard let bundle = try a.positionals(atMost: 1, for: name).first else {
            throw CommandError.usage("cutover needs a BUNDLE")
        }
        let receipts = a.value("receipts")
        guard (a.value("to") == nil) != (receipts == nil) else {
            throw CommandError.usage("cutover needs --to v2|v1 or --receipts api|shadow|apple (one of them)")
        }
        let to = a.value("to") ?? receipts ?? ""
        let given = try a.environment()
        let config = try a.config(for: name)
        guard let app = config.apps.first(where: { $0.bundleID == bundle }) else {
            throw CommandError.failure("\(bundle) is not configured")
        }
        let environment: String
        if let given {
            environment = given.rawValue
        } else if app.environments.count == 1, let only = app.environments.first {
            environment = only.rawValue
        } else {
            throw CommandError.usage("\(bundle) takes several environments: give --environment production or sandbox")
        }
        let now = WallClock.wallMillis()
        // A refusal (`not_ready: …`, `unchanged: …`) is a CutoverError: exit 1 with its description.
        let record = try withStore(config) { store in
            let ledger = CompareLedger(store: store.store, config: config)
            let move = receipts == nil ? ledger.cutover : ledger.cutoverReceipts
            return try move(
                bundle,
                environment,
                to,
                ProcessEnvironment.userName,
                a.value("reason"),
                a.has("force"),
                now
            )
        }
        // The same log line as the admin API's, on standard error (standard output holds the record).
        CompareLedger.logCutover(
            record,
            receipts: receipts != nil,
            to: Log(now: WallClock.wallMillis, sink: { line in FileHandleOutput.stderr(line + "\n") })
        )
        print(JSONOutput.string(record))
        return 0
    }
}
