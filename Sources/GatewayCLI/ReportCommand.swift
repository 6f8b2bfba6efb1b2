internal import Gateway
internal import Reports
internal import ServiceKit

/// `iap-gateway report`: the side-by-side comparison of V1 and V2 per bundle and environment, with the readiness
/// verdict, as a table, JSON or one HTML page.
enum ReportCommand: Command {
    static let name = "report"
    static let usage = """
          iap-gateway report --config FILE [--bundle B] [--since T] [--format table|json|html]
              The side-by-side comparison per bundle and environment: events per generation, pairs compared,
              agreement rate over time, disagreements by field with examples, one-sided counts, and the readiness
              verdict with its rule. html is one self-contained page.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "bundle", "since", "format"])
        _ = try a.positionals(atMost: 0, for: name)
        let format = a.value("format") ?? "table"
        guard ReportRenderer.formats.contains(format) else {
            throw CommandError.usage("--format must be table, json or html")
        }
        let now = WallClock.wallMillis()
        let since = try a.time("since", now: now)
        let config = try a.config(for: name)
        let report = try withStore(config) { store in
            try CompareLedger(store: store.store, config: config)
                .report(
                    bundleID: a.value("bundle"),
                    since: since ?? now - config.compareSettings.rule.windowMillis,
                    until: now
                )
        }
        guard let rendered = ReportRenderer.render(report, format: format) else {
            throw CommandError.usage("--format must be table, json or html")
        }
        print(String(decoding: rendered.body, as: UTF8.self), terminator: format == "json" ? "\n" : "")
        return 0
    }
}
