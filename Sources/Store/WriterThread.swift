#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a thread of its own (detached: it ends when `body` returns). The journal writer's loop runs on one
/// rather than on a Dispatch queue: every caller of a write blocks its thread until the writer commits, and when
/// enough callers block Dispatch's threads, a loop queued on Dispatch would wait for a thread that never comes — a
/// deadlock seen with many stores open in one process. Returns false when the system refuses a thread.
func startWriterThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let start = Unmanaged.passRetained(Start(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            guard let raw else { return nil }
            Unmanaged<Start>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, start)
    guard rc == 0 else {
        Unmanaged<Start>.fromOpaque(start).release()
        return false
    }
    pthread_detach(thread)
    return true
}
