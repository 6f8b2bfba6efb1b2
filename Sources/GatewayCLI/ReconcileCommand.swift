internal import Canonical
internal import Gateway
internal import WireJSON

/// `iap-gateway reconcile`: every recovery run of the config's apps, now (docs/operations.md, "Reconciliation").
public enum ReconcileCommand: Command {
    static let name = "reconcile"
    static let usage = """
          iap-gateway reconcile --config FILE [--bundle B] [--environment E]
              Run the recovery runs now, whatever their schedule: the notification-history sweep (up to now) and
              subscription reconciliation. Prints what each run checked, recovered and asked Apple; the events are
              delivered by the running gateway.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "bundle", "environment"])
        _ = try a.positionals(atMost: 0, for: name)
        let environment = try a.environment()
        var config = try a.config(for: name)
        // On demand, the history is swept up to now: nothing is being delivered live that the sweep could take first.
        config.reconcile.historyLagMillis = 0
        let reports = try await withService(config) { service in
            try await service.reconcile.runNow(bundleID: a.value("bundle"), environment: environment)
        }
        if reports.isEmpty {
            throw CommandError.usage(
                "nothing to run: no app has the credentials a recovery run needs (app_store_api, or shared secrets with verify_receipt)"
            )
        }
        for report in reports { print(JSONOutput.string(report)) }
        return reports.contains { $0.error != nil } ? 1 : 0
    }
}
