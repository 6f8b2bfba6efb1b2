internal import Canonical
internal import Gateway
internal import ReceiptPath
import Synchronization
internal import WireJSON

/// `iap-gateway receipts prefetch`: the customers' histories of one app and environment fetched before a cutover
/// (docs/commands.md, "receipts prefetch"; docs/operations.md, "The receipt path at scale").
enum ReceiptsCommand: Command {
    static let name = "receipts"
    static let usage = """
          iap-gateway receipts prefetch --config FILE --bundle B [--environment E] [--share F] [--after ID]
                                        [--limit N]
              Fetch from the App Store Server API, and keep, the history of every customer the gateway knows for B in
              E (production): the original transaction ids of its journaled subscriptions and of the receipts
              compared in shadow, in the order of their ids, a page at a time. Customers whose stored history is
              younger than receipts.history_max_age are skipped. The calls take background turns in a budget of
              app_store_api.rate_limits times --share (0.5; 0.05…1): leave the rest to the running gateways. Prints
              a JSON line of progress every 10 s and one at the end: state, total, done, fetched, skipped, failed,
              failures, calls, history_calls, elapsed_seconds, after (every customer up to it is done),
              budget_per_second, calls_per_second, projected_hours. --after ID goes on after ID (a line's after);
              --limit N stops after N customers. SIGINT or SIGTERM stops the fetches (their pages kept) and prints
              the last line. Exit status 0 when every customer was gone through without a failure, 1 otherwise.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "bundle", "environment", "share", "after", "limit"])
        let positionals = try a.positionals(atMost: 1, for: name)
        guard let verb = positionals.first else { throw CommandError.usage("receipts needs a subcommand: prefetch") }
        guard verb == "prefetch" else { throw CommandError.usage("receipts: unknown subcommand \(verb) (prefetch)") }
        guard let bundle = a.value("bundle"), !bundle.isEmpty else {
            throw CommandError.usage("receipts prefetch needs --bundle B")
        }
        let environment = try a.environment() ?? .production
        let share = try a.number(
            "share",
            default: 0.5,
            valid: { (0.05...1).contains($0) },
            "--share must be a number from 0.05 to 1"
        )
        let limit: Int? =
            a.value("limit") == nil
            ? nil : try a.number("limit", default: 0, valid: { $0 > 0 }, "--limit must be a positive number")
        let after = a.value("after") ?? ""
        var config = try a.config(for: "receipts prefetch")
        guard let app = config.apps.first(where: { $0.bundleID == bundle }) else {
            throw CommandError.usage("receipts prefetch: \(bundle) is not an app of the config")
        }
        guard app.environments.contains(environment) else {
            throw CommandError.usage("receipts prefetch: \(bundle) does not take \(environment.rawValue)")
        }
        guard config.hasAppStoreAPICredentials else {
            throw CommandError.usage(
                "receipts prefetch needs app_store_api (issuer_id, key_id, private_key_env) in the config"
            )
        }
        // This process's budget is its share of the configured one: the running gateways spend the rest.
        config.appStoreAPI.rateLimits.margin *= share
        var options = ReceiptPrefetch.Options(bundleID: bundle, environment: environment)
        (options.after, options.limit) = (after, limit)
        let rate = config.appStoreAPI.rateLimits.rate(.transactionHistory, environment)
        // Enough fetches at once to keep the share's turns taken while each waits for Apple.
        options.concurrency = max(4, min(64, Int(rate.rounded(.up))))
        let chosen = options
        let last = try await withService(config) { service in
            let run = Task { [service] in
                try await ReceiptPrefetch.run(
                    receipts: service.receiptEndpoint,
                    rateLimits: service.config.appStoreAPI.rateLimits,
                    options: chosen
                ) { line in
                    print(JSONOutput.string(line))
                }
            }
            Task {
                await Signals.waitForTermination()
                run.cancel()
            }
            do { return try await run.value } catch let refusal as ReceiptPrefetch.Refusal {
                throw CommandError.usage(refusal.message)
            }
        }
        return last.state == "complete" || last.state == "limit" ? (last.failed == 0 ? 0 : 1) : 1
    }
}
