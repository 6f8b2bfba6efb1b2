internal import FoundationEssentials
import Synchronization
internal import Threads

#if canImport(Glibc)
import Glibc
#endif

/// Writes 8 KiB and `fdatasync`s it in a file of `directory` every 50 ms, on a thread of its own, while a phase of
/// the bench runs: how long the disk took to make a small write durable meanwhile — what every commit of a durable
/// store waits for. A latency percentile near the worst fsync says the disk, not the store, set it. At 20 writes a
/// second it adds nothing measurable to the load.
final class FsyncProbe: Sendable {
    private let samples = Mutex<[Double]>([])
    private let stopping = Atomic<Bool>(false)
    private let path: String
    private let thread = Mutex<OSThread?>(nil)

    /// Starts probing; nil when the file cannot be created or no thread started (the bench then reports no figure).
    init?(directory: String) {
        path = directory + "/fsync-probe"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return nil }
        let started = OSThread.start(name: "iapgw-fsprobe") { [self] in
            let block = [UInt8](repeating: 0x5a, count: 8192)
            let clock = ContinuousClock()
            while !stopping.load(ordering: .relaxed) {
                let start = clock.now
                let written = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                if written == block.count, fdatasync(fd) == 0 {
                    let d = (clock.now - start).milliseconds
                    samples.withLock { $0.append(d) }
                }
                usleep(50_000)
            }
            close(fd)
        }
        guard let started else {
            close(fd)
            unlink(path)
            return nil
        }
        thread.withLock { $0 = started }
    }

    /// Stops the thread and returns (median, worst) in milliseconds, rounded to 0.1; zeros when nothing was measured.
    func finish() -> (p50: Double, max: Double) {
        let sorted = stop()
        return (sorted.quantile(0.5, decimals: 1), sorted.quantile(1, decimals: 1))
    }

    /// Stops the thread, removes the file and returns every wait measured, in milliseconds, shortest first.
    func stop() -> [Double] {
        stopping.store(true, ordering: .relaxed)
        thread.withLock { $0 }?.join()
        unlink(path)
        return samples.withLock { $0 }.sorted()
    }
}

extension Duration {
    /// In milliseconds, fractions kept: how the benches report latencies.
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
