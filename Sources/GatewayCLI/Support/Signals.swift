import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How the long-running commands (`serve`, `receive`, `simulate serve-apple`) wait to be stopped.
enum Signals {
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
    // written once, before any signal can fire
    nonisolated(unsafe) static var retained: [any DispatchSourceSignal] = []
    static func keep(_ s: [any DispatchSourceSignal]) { retained = s }
}

final class OnceFlag: Sendable {
    private let fired = Mutex(false)
    func claim() -> Bool {
        fired.withLock { f in
            defer { f = true }
            return !f
        }
    }
}
