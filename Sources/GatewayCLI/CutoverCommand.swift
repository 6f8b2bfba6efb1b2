internal import Gateway

/// `iap-gateway cutover`: make V2 (or V1 again) authoritative for a bundle's new notifications.
enum CutoverCommand: Command {
    static let name = "cutover"
    static let usage = """
          iap-gateway cutover --config FILE BUNDLE [--environment E] --to v2|v1 [--reason TEXT] [--force]
              Make V2 (or V1 again) authoritative for BUNDLE's new notifications; stored, logged with who and why.
              Moving to V2 needs a ready verdict unless --force; moving back to V1 is always allowed.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "environment", "to", "reason"], switchFlags: ["force"])
        guard let bundle = try a.positionals(atMost: 1, for: name).first else {
            throw CommandError.usage("cutover needs a BUNDLE")
        }
        guard let to = a.value("to") else { throw CommandError.usage("cutover needs --to v2 or --to v1") }
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
            try CompareLedger(store: store.store, config: config).cutover(
                bundleID: bundle,
                environment: environment,
                to: to,
                who: ProcessEnvironment.userName,
                reason: a.value("reason"),
                force: a.has("force"),
                now: now
            )
        }
        print(JSONOutput.string(record))
        return 0
    }
}
