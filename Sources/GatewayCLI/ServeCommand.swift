internal import Canonical
public import Gateway
internal import Reports
internal import ServiceKit

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway serve --config FILE`: starts the service and runs until SIGTERM or SIGINT, then stops gracefully.
public enum ServeCommand: Command {
    static let name = "serve"
    static let usage = """
          iap-gateway serve --config FILE [--demo-verify-time T]
              Run the gateway: POST /notifications and GET /healthz; GET /metrics and the admin API on admin.listen
              (bearer token from admin.token_env). Stops gracefully on SIGTERM / SIGINT. --demo-verify-time (demos
              with saved samples only) judges sandbox notifications' freshness as of T instead of the clock.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "demo-verify-time"])
        _ = try a.positionals(atMost: 0, for: name)
        guard let path = a.value("config") else { throw CommandError.usage("serve needs --config FILE") }
        let demoTime = try a.time("demo-verify-time", now: WallClock.wallMillis())
        return await run(configPath: path, demoSandboxVerifyTime: demoTime)
    }

    /// Returns the process exit status.
    /// `demoSandboxVerifyTime`: `--demo-verify-time` (ms), for demos with saved samples only.
    public static func run(configPath: String, demoSandboxVerifyTime: Int64? = nil) async -> Int32 {
        let config: GatewayConfig
        do { config = try GatewayConfig.load(path: configPath) } catch {
            FileHandleOutput.stderr("iap-gateway: config: \(error)\n")
            return 2
        }
        // Writes to a peer that went away must be an error, not a signal that kills the process.
        signal(SIGPIPE, SIG_IGN)
        let service: GatewayService
        do {
            service = try GatewayService(
                config: config,
                dependencies: dependencies(demoSandboxVerifyTime: demoSandboxVerifyTime)
            )
            try service.start()
        } catch {
            FileHandleOutput.stderr("iap-gateway: cannot start: \(error)\n")
            return 2
        }
        await Signals.waitForTermination()
        service.log.info("shutting down")
        await service.shutdown()
        return 0
    }

    /// The real process's dependencies, with the admin API rendering reports as table, JSON and HTML.
    public static func dependencies(demoSandboxVerifyTime: Int64?) -> GatewayService.Dependencies {
        var dependencies = GatewayService.Dependencies.live()
        dependencies.demoSandboxVerifyTime = demoSandboxVerifyTime
        dependencies.reportRenderer = { report, format, nonce in
            ReportRenderer.render(report, format: format, styleNonce: nonce)
        }
        return dependencies
    }
}
