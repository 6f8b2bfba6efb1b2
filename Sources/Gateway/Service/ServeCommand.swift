import Dispatch
internal import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway serve --config FILE`: starts the service and runs until SIGTERM or SIGINT, then stops gracefully.
public enum ServeCommand {
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
            var dependencies = GatewayService.Dependencies.live()
            dependencies.demoSandboxVerifyTime = demoSandboxVerifyTime
            service = try GatewayService(config: config, dependencies: dependencies)
            try service.start()
        } catch {
            FileHandleOutput.stderr("iap-gateway: cannot start: \(error)\n")
            return 2
        }
        await waitForTermination()
        service.log.info("shutting down")
        await service.shutdown()
        return 0
    }

    /// Suspends until SIGTERM or SIGINT arrives.
    static func waitForTermination() async {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let queue = DispatchQueue(label: "iap-gateway.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGTERM, SIGINT] {
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler {
                    if once.claim() { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            SignalSources.keep(sources)
        }
    }
}

/// Keeps the signal sources alive for the life of the process.
private enum SignalSources {
    nonisolated(unsafe) static var retained: [any DispatchSourceSignal] = []  // written once, before any signal can fire
    static func keep(_ s: [any DispatchSourceSignal]) { retained = s }
}

import Synchronization

final class OnceFlag: Sendable {
    private let fired = Mutex(false)
    func claim() -> Bool {
        fired.withLock { f in
            defer { f = true }
            return !f
        }
    }
}
