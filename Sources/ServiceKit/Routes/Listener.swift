package import HTTPServer
import Synchronization
internal import Threads

/// An HTTP listener as a background service: bound when it is made, so that its port and a "cannot listen" error come
/// back at once, and stopped by the service group before the parts that answer its requests — ``stop()`` takes no new
/// connection, then ``run()`` lets the requests in flight finish and closes the server (docs/architecture.md, "The
/// service").
package final class Listener: BackgroundService {
    /// The server, owned here: started in `init`, stopped once by ``run()`` after ``stop()``.
    private struct Owned: @unchecked Sendable {
        // @unchecked: `HTTPServer` is a non-Sendable owner type; it is only touched under `server`'s lock, and its
        // `stop()` runs once, off the lock, after it was taken out.
        let server: HTTPServer
    }

    private let server: Mutex<Owned?>
    private let stopping = Latch()
    /// The bound port (the configured one, or the one the system chose for port 0).
    package let port: UInt16

    /// Starts `server` listening; `describe` turns the server's error into the caller's (a config field's).
    package init<Failure: Error>(
        _ server: HTTPServer,
        failure describe: (HTTPServerError) -> Failure
    ) throws(Failure) {
        do { try server.start() } catch { throw describe(error) }
        port = server.port
        self.server = Mutex(Owned(server: server))
    }

    package func run() async {
        await withTaskCancellationHandler {
            await stopping.wait()
        } onCancel: {
            stopping.open()
        }
        guard let owned = server.withLock({ $0.take() }) else { return }
        // Waiting for requests in flight blocks: on a dispatch thread, never the cooperative pool's (the requests
        // being finished may need it).
        await Blocking.run(on: .global()) { owned.server.stop() }
    }

    /// No new connection from now on; ``run()`` finishes the requests in flight and closes the server.
    package func stop() {
        server.withLock { $0?.server.stopAccepting() }
        stopping.open()
    }
}
