import FuzzSupport
import Gateway
import HTTPClient
import Reports
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// HTTP request handling end to end: the whole `GatewayService` (libmicrohttpd, the public routes with V1/V2 ingest
/// into a scratch SQLite store, the admin API) is started once on 127.0.0.1 port 0, and every input is written as
/// raw bytes to a fresh TCP connection, followed by a `Connection: close` health check, and the answer is read until
/// the server closes the connection.
///
/// Input: a mode byte, then the raw bytes. Mode bit 0: 0 the public listener, 1 the admin listener (bearer token
/// `fuzz-admin-token`). A crash anywhere in the server is a crash of this process. A server that keeps sending for
/// `answerTimeoutSeconds`, or that falls silent on an input and then fails a fresh health check, is reported as a
/// hang (and libFuzzer's `-timeout` backs that up).
@main enum HTTPFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private let answerTimeoutSeconds: Int32 = 10

/// A fixed clock (2025-06-01T00:01:00Z) so the synthetic V2 seeds (signed 2025-06-01) are live traffic.
private let now: Int64 = 1_748_736_060_000

/// Every outbound call (deliveries, Apple) answered 503 at once: nothing leaves the process.
private struct Unavailable: HTTPTransport {
    func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse { HTTPResponse(status: 503) }
}

private final class Server: Sendable {
    let service: GatewayService
    let port: UInt16
    let adminPort: UInt16
    let directory: String

    init() {
        var template = Array("/tmp/iapgw-fuzz-http.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("fuzz: mkdtemp failed") }
        let path = String(cString: made)
        directory = path
        scratchDirectory.withLock { $0 = path }
        atexit { removeScratchDirectory() }
        let root = FuzzSupport.repositoryRoot
        let configText = """
            {"listen":"127.0.0.1:0","admin":{"listen":"127.0.0.1:0","token_env":"IAPGW_FUZZ_ADMIN_TOKEN"},
             "store":{"sqlite":"\(directory)/gateway.db"},
             "trust":{"extra_roots":["\(root)/Fixtures/test-pki/root.der"]},
             "apps":[{"bundle_id":"com.example.gateway","app_apple_id":1234567890,"environments":["production","sandbox"],
                      "shared_secret_env":["IAPGW_FUZZ_SECRET"],"verify_receipt":false},
                     {"bundle_id":"com.loki-project.loki-messenger","app_apple_id":1470168868,"environments":["sandbox"]}],
             "limits":{"http_threads":4,"untrusted_quarantine":1000,"genuine_quarantine":1000}}
            """
        do {
            let config = try GatewayConfig.parse(Array(configText.utf8), baseDirectory: directory)
            var dependencies = GatewayService.Dependencies(
                environment: [
                    "IAPGW_FUZZ_SECRET": "0123456789abcdef0123456789abcdef",
                    "IAPGW_FUZZ_ADMIN_TOKEN": "fuzz-admin-token",
                ],
                transport: Unavailable(),
                now: { now },
                jitter: { 0.5 },
                logSink: { _ in }
            )
            // As `serve` runs it: /admin/report renders tables and HTML pages too.
            dependencies.reportRenderer = { report, format, nonce in
                ReportRenderer.render(report, format: format, styleNonce: nonce)
            }
            service = try GatewayService(config: config, dependencies: dependencies)
            let ports = try service.start()
            guard let admin = ports.adminPort else { fatalError("fuzz: the admin listener did not start") }
            (port, adminPort) = (ports.port, admin)
        } catch {
            fatalError("fuzz: cannot start the gateway: \(error)")
        }
        if FuzzSupport.debugging { print("gateway on \(port), admin on \(adminPort), store in \(directory)") }
    }
}

private let server = Server()

/// The server's scratch directory (its SQLite store), removed at exit: fork mode starts a server per job.
private let scratchDirectory = Mutex<String?>(nil)

private func removeScratchDirectory() {
    guard let directory = scratchDirectory.withLock({ $0 }), let dir = opendir(directory) else { return }
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != ".", name != ".." { unlink(directory + "/" + name) }
    }
    closedir(dir)
    rmdir(directory)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let (answer, stalled) = exchange(input.rest() + sentinel, port: mode & 1 == 0 ? server.port : server.adminPort)
    if FuzzSupport.debugging {
        let head = answer.prefix { $0 != 13 && $0 != 10 }
        print("answer: \(answer.count) bytes\(stalled ? " (stalled)" : ""): \(String(decoding: head, as: UTF8.self))")
    }
    if !answer.isEmpty, !answer.starts(with: Array("HTTP/1.".utf8)) {
        FuzzSupport.fail("the server answered something that is not HTTP/1.x")
    }
    if stalled {
        // The server is waiting for bytes the input promised (a longer body, an unfinished header). That is its
        // right; but it must still serve others: a fresh health check must be answered in time.
        let (health, stuck) = exchange(Array(sentinel), port: server.port, idleMillis: nil)
        guard !stuck, health.starts(with: Array("HTTP/1.1 200".utf8)) else {
            FuzzSupport.fail("the server stopped answering health checks after this input")
        }
    }
    return 0
}

/// Sent after every input on the same connection: when the input's requests are complete, this one is answered
/// last and closes the connection (libmicrohttpd drops requests on a half-closed connection, so EOF cannot mark the
/// end of the input).
private let sentinel = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)

/// Sends `request` on a new connection and returns everything the server sent until it closed the connection, or
/// until it had been silent for `idleMillis` (then `stalled`). Fails when the server neither closes nor falls
/// silent within `answerTimeoutSeconds`.
private func exchange(_ request: [UInt8], port: UInt16, idleMillis: Int32? = 50) -> (answer: [UInt8], stalled: Bool) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fatalError("fuzz: socket: errno \(errno)") }
    defer { close(fd) }
    // Reset instead of TIME_WAIT when closing: thousands of connections a minute would exhaust the ephemeral ports.
    var noLinger = linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { FuzzSupport.fail("cannot connect to the gateway on port \(port): errno \(errno)") }

    var sent = 0
    while sent < request.count {
        let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { break }  // The server closed early (a 413, a 400): read what it said.
        sent += n
    }

    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let deadline = monotonicSeconds() + Double(answerTimeoutSeconds)
    var on: Int32 = 1
    while true {
        // ACK at once: libmicrohttpd writes a response in more than one segment, and a delayed ACK against its
        // Nagle would cost 40 ms per exchange. (Linux clears the flag again by itself, so it is set every time.)
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &on, socklen_t(MemoryLayout<Int32>.size))
        let left = deadline - monotonicSeconds()
        guard left > 0 else {
            FuzzSupport.fail("the server neither answered nor fell silent within \(answerTimeoutSeconds) s")
        }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let wait = min(Int32(left * 1000) + 1, idleMillis ?? Int32.max)
        let ready = poll(&p, 1, wait)
        if ready < 0, errno == EINTR { continue }
        if ready == 0 {
            if idleMillis != nil { return (answer, true) }
            continue
        }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { break }  // closed (or reset)
        answer += buffer[0..<n]
    }
    return (answer, false)
}

private func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
