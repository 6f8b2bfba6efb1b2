import Dispatch
internal import FoundationEssentials
import Synchronization
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// The log line a gateway writes last.
private let stoppedMarker = Array(#""msg":"stopped""#.utf8)

/// A child process started with `posix_spawn`, its standard output read line by line on a dedicated thread
/// (so the child never blocks on a full pipe). Used by `bench ingest` to run the gateway in its own process.
final class ChildProcess: Sendable {
    let pid: pid_t
    private let lines = Mutex<[String]>([])
    private let outputBytes = Atomic<Int>(0)
    private let readerDone = DispatchSemaphore(value: 0)

    struct SpawnFailure: Error, CustomStringConvertible { var description: String }

    /// `discardStandardError`: the child's standard error goes to /dev/null instead of this process's.
    init(
        executable: String,
        arguments: [String],
        environment: [String: String],
        discardStandardError: Bool = false
    ) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SpawnFailure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        if discardStandardError { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        // The child starts with no signal blocked, as from a shell: this process's threads block signals (SIGALRM,
        // SIGTERM, …) that a child inherits through posix_spawn, and `openssl speed` times itself with SIGALRM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw SpawnFailure(description: "posix_spawn failed (\(rc))")
        }
        pid = child
        let fd = fds[0]
        DispatchQueue(label: "iap-gateway.child-stdout").async { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                outputBytes.add(n, ordering: .relaxed)
                pending += buffer[0..<n]
                // The lines of this read, then what is left of the last one moved to the front once: removing each
                // line from the front of `pending` moved the rest every time, and this reader (a log line per
                // notification) shares the cores with the gateway it measures.
                var start = 0
                while let nl = pending[start...].firstIndex(of: 0x0A) {
                    // The first lines and the last ("stopped"), each decoded only when it is kept.
                    let bytes = pending[start..<nl]
                    start = nl + 1
                    lines.withLock { kept in
                        guard kept.count < 64 || bytes.contains(stoppedMarker) else { return }
                        kept.append(String(decoding: bytes, as: UTF8.self))
                    }
                }
                pending.removeSubrange(..<start)
            }
            close(fd)
            readerDone.signal()
        }
    }

    /// The first `"msg":"listening"` log line's port, waiting up to `timeout` seconds.
    func listeningPort(timeout: Double) -> UInt16? {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(timeout * 1000)))
        while ContinuousClock.now < deadline {
            for line in lines.withLock({ $0 }) where line.contains("\"msg\":\"listening\"") {
                if case .object(let o)? = try? JSONParser.parse(Array(line.utf8)), let port = o["port"]?.int64Value {
                    return UInt16(port)
                }
            }
            usleep(10_000)
        }
        return nil
    }

    /// Bytes the child has written to standard output so far (its log).
    var stdoutBytes: Int { outputBytes.load(ordering: .relaxed) }

    /// Resident set (VmRSS) in MB now.
    var rssMB: Double { statusField("VmRSS:") }

    private func statusField(_ name: String) -> Double {
        guard let data = try? Data(contentsOf: URL(filePath: "/proc/\(pid)/status")) else { return 0 }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name) {
            let kb = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
            return (kb / 1024 * 10).rounded() / 10
        }
        return 0
    }

    /// The lines kept so far (the first 64 and the final "stopped" line).
    var keptLines: [String] { lines.withLock { $0 } }

    /// Peak resident set (VmHWM) in MB, while the child runs.
    var peakRSSMB: Double { statusField("VmHWM:") }

    /// CPU time (user + system, all threads) the child has used so far, in seconds: fields 14 and 15 of
    /// `/proc/PID/stat`, in the kernel's fixed USER_HZ of 100 ticks per second.
    var cpuSeconds: Double { Self.cpuSeconds(statPath: "/proc/\(pid)/stat") ?? 0 }

    /// CPU seconds so far of each of the child's threads that is still running, summed by thread name (`comm`: the
    /// gateway names its own threads, `iapgw-handler`, `iapgw-writer`; libmicrohttpd's are `MHD-worker`).
    var cpuSecondsByThreadName: [String: Double] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        var sums: [String: Double] = [:]
        for task in tasks {
            let dir = "/proc/\(pid)/task/\(task)"
            guard let comm = try? Data(contentsOf: URL(filePath: dir + "/comm")),
                let seconds = Self.cpuSeconds(statPath: dir + "/stat")
            else { continue }  // the thread ended meanwhile
            let name = String(decoding: comm.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            sums[name, default: 0] += seconds
        }
        return sums
    }

    /// User + system seconds from a `stat` file of `/proc` (a process's or a thread's).
    private static func cpuSeconds(statPath: String) -> Double? {
        guard let data = try? Data(contentsOf: URL(filePath: statPath)) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / 100
    }

    /// The exit status once the child was waited for (``terminate(signal:)``): never waited for twice, and never
    /// signalled after, since its pid may belong to another process by then.
    private let exitStatus = Mutex<Int32?>(nil)

    /// Sends `sig` without waiting (nothing once the child was waited for).
    func signal(_ sig: Int32) {
        exitStatus.withLock { status in
            if status == nil { kill(pid, sig) }
        }
    }

    /// Sends `signal` and waits for the child to exit; returns its exit status (or 128 + signal). A child already
    /// waited for is not signalled again: its status is returned.
    @discardableResult
    func terminate(signal sig: Int32 = SIGTERM) -> Int32 {
        exitStatus.withLock { known in
            if let known { return known }
            kill(pid, sig)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            readerDone.wait()
            let exited = (status & 0x7F) == 0
            let result = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            known = result
            return result
        }
    }

    /// Waits for the child to exit on its own (a one-shot command): its exit status (or 128 + signal) and its peak
    /// resident set in MB, the largest VmHWM read while it ran (every 5 ms). Not `wait4`'s `ru_maxrss`: Linux counts
    /// in it the memory of the process that spawned the child (its address space until the exec), this bench's. A
    /// child already waited for answers its status and 0.
    func waitForExit() -> (status: Int32, peakRSSMB: Double) {
        var peak = 0.0
        let status = exitStatus.withLock { known -> Int32 in
            if let known { return known }
            var status: Int32 = 0
            while true {
                let hwm = statusField("VmHWM:")
                let done = waitpid(pid, &status, WNOHANG)
                if done == pid || done < 0 { break }
                peak = max(peak, hwm)
                usleep(5_000)
            }
            readerDone.wait()
            let exited = (status & 0x7F) == 0
            let result = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            known = result
            return result
        }
        return (status, peak)
    }

    /// A field of the first `"msg":"listening"` log line (`port`, `instance`, `store`), as text.
    func listeningField(_ name: String) -> String? {
        for line in keptLines where line.contains("\"msg\":\"listening\"") {
            guard case .object(let o)? = try? JSONParser.parse(Array(line.utf8)), let value = o[name] else { continue }
            if let s = value.stringValue { return s }
            if let n = value.int64Value { return String(n) }
        }
        return nil
    }
}
