import Dispatch
import Foundation
import Glibc
import Synchronization

// Raw sockets for testing servers the way hostile or slow clients use them: bytes exactly as written, a chosen
// loopback source address, replies parsed by hand.

/// One parsed HTTP/1.1 response.
public struct RawHTTPReply: Sendable, CustomStringConvertible {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole body announced by `Content-Length` arrived.
    public var complete: Bool

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
    public var description: String {
        "\(status) \(headers.map { "\($0.name): \($0.value)" }) \(String(decoding: body, as: UTF8.self)) complete=\(complete)"
    }

    /// The first response in `bytes`, once its head is complete.
    public static func parse(_ bytes: [UInt8]) -> RawHTTPReply? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) })
        else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines[0].split(separator: " ")
        guard statusWords.count >= 2, statusWords[0] == "HTTP/1.1", let status = Int(statusWords[1]) else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            )
        }
        let rest = Array(bytes[(end + 4)...])
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        return RawHTTPReply(
            status: status,
            headers: headers,
            body: Array(rest.prefix(length)),
            complete: rest.count >= length
        )
    }
}

/// A blocking TCP client socket to 127.0.0.1, bound to a chosen loopback source address (closed at deinit).
public final class RawHTTPClient: Sendable {
    public let fd: Int32
    private let closed = Atomic<Bool>(false)

    public init(port: UInt16, from source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(operation: "socket", errno: errno) }
        // Sends give up after 10 s rather than hang a test on a server that stopped reading.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else {
            Glibc.close(fd)
            throw SocketError(operation: "inet_pton", errno: EINVAL)
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let error = SocketError(operation: "bind", errno: errno)
            Glibc.close(fd)
            throw error
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard connected == 0 else {
            let error = SocketError(operation: "connect", errno: errno)
            Glibc.close(fd)
            throw error
        }
    }

    deinit { close() }

    /// Writes all of `bytes`; false if the connection failed first (MSG_NOSIGNAL: no SIGPIPE for the tests).
    @discardableResult public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    @discardableResult public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Everything received until the server closes (EOF or reset) or `timeout` passes.
    public func readUntilClosed(timeout: Duration) async -> (bytes: [UInt8], closed: Bool) {
        let fd = fd
        return await offPool {
            var received: [UInt8] = []
            let closed = RawHTTPClient.receive(fd, timeout: timeout) {
                received.append(contentsOf: $0)
                return true
            }
            return (received, closed)
        }
    }

    /// The next response, read until it is complete, the server closes, or `timeout` passes; nil without a
    /// complete head.
    public func readReply(timeout: Duration) async -> RawHTTPReply? {
        let fd = fd
        return await offPool {
            var received: [UInt8] = []
            _ = RawHTTPClient.receive(fd, timeout: timeout) { piece in
                received.append(contentsOf: piece)
                return RawHTTPReply.parse(received)?.complete != true
            }
            return RawHTTPReply.parse(received)
        }
    }

    /// How many bytes arrived first (waiting up to `timeout` for any).
    public func readSome(timeout: Duration) async -> Int {
        let fd = fd
        return await offPool {
            var count = 0
            _ = RawHTTPClient.receive(fd, timeout: timeout) {
                count += $0.count
                return false
            }
            return count
        }
    }

    /// Whether the server has closed the connection (end of file or reset), looked at without waiting and without
    /// consuming anything that arrived.
    public var closedByPeer: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n == 0 { return true }
        if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR }
        return false
    }

    /// Closes with SO_LINGER 0, so the server sees a reset rather than an orderly close.
    public func resetAndClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    public func close() {
        if !closed.exchange(true, ordering: .relaxed) { _ = Glibc.close(fd) }
    }

    /// Calls `chunk` for each piece received until it returns false; true when the peer closed.
    private static func receive(_ fd: Int32, timeout: Duration, _ chunk: ([UInt8]) -> Bool) -> Bool {
        var interval = timeval(tv_sec: 0, tv_usec: 100_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while clock.now < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                guard chunk(Array(buffer[..<n])) else { return false }
            } else if n == 0 || errno == ECONNRESET {
                return true
            }
        }
        return false
    }
}

public struct SocketError: Error {
    public var operation: String
    public var errno: Int32
}

/// Sends `line` on each client every `interval`, on a thread of its own, until stopped.
public final class Trickler: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    public init(_ clients: [RawHTTPClient], line: String, every interval: Duration) {
        let bytes = Array(line.utf8)
        let microseconds = UInt32(
            interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000
        )
        Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                for client in clients { client.send(bytes) }
                usleep(microseconds)
            }
            finished.signal()
        }.start()
    }

    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }
}

/// Runs blocking work on its own thread, off Swift's cooperative pool.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
