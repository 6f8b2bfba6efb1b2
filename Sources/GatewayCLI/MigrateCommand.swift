internal import Canonical
internal import Gateway
internal import ServiceKit
internal import WireJSON

/// `iap-gateway migrate`: switch the version of the notifications Apple sends for an app and environment through the
/// App Store Connect API, prove it with a test notification, then move the gateway's authority — resumable, and
/// reverted when the proof does not come (docs/operations.md, "Migrating a bundle"). The switch itself is
/// `AppleSwitcher` in the Gateway module.
enum MigrateCommand: Command {
    static let name = "migrate"
    static let usage = """
          iap-gateway migrate --config FILE BUNDLE --environment sandbox|production --to v2|v1 [--dry-run] [--force]
                              [--reason TEXT] [--probe-timeout D]
              Set Apple (App Store Connect) to send BUNDLE's notifications of that environment in V2 (or V1 again),
              wait until this gateway receives Apple's test notification (--probe-timeout, default 2m), then make that
              generation authoritative. One JSON line per step. A failed probe sets Apple back and exits 1; a run
              interrupted in the middle is resumed (or, with the other --to, reverted) by the next. V2 needs a ready
              verdict unless --force. Sandbox first.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(
            arguments,
            valueFlags: ["config", "environment", "to", "reason", "probe-timeout"],
            switchFlags: ["dry-run", "force"]
        )
        guard let bundle = try a.positionals(atMost: 1, for: name).first else {
            throw CommandError.usage("migrate needs a BUNDLE")
        }
        guard a.value("environment") != nil else {
            throw CommandError.usage("migrate needs --environment sandbox or production (sandbox first)")
        }
        guard a.value("to") != nil else { throw CommandError.usage("migrate needs --to v2 or --to v1") }
        let request: MigrationRequest
        do {
            request = try MigrationRequest.parse(
                bundleID: bundle,
                environment: a.value("environment"),
                to: a.value("to"),
                dryRun: a.has("dry-run"),
                force: a.has("force"),
                reason: a.value("reason"),
                probeTimeout: a.value("probe-timeout"),
                who: ProcessEnvironment.userName
            )
        } catch {
            throw CommandError.usage(error.reason)
        }
        let config = try a.config(for: name)
        return try await withService(config) { service in
            do throws(MigrationError) {
                try await service.switcher.run(request) { step in
                    FileHandleOutput.stdout(JSONOutput.string(step) + "\n")
                }
                return 0
            } catch {
                throw CommandError.failure("migrate: \(error.description)")
            }
        }
    }
}
