import HTTPClient
import HTTPServer
import Synchronization
import TestSupport
import Testing

/// ``ServerResponse/later(_:)``: a handler that hands its answer to async work frees its thread at once; the
/// connection waits for the work, and a stop waits for it too.
@Suite struct DeferredResponseTests {
    /// Work that waits until the test opens the gate.
    final class Gate: Sendable {
        private let open = Atomic<Bool>(false)
        private let waiting = Atomic<Int>(0)
        func pass() async {
            waiting.add(1, ordering: .relaxed)
            while !open.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(2)) }
        }
        func openIt() { open.store(true, ordering: .releasing) }
        var waiters: Int { waiting.load(ordering: .relaxed) }
        var isOpen: Bool { open.load(ordering: .acquiring) }
    }

    /// Responses collected from background requests.
    final class Responses: Sendable {
        private let all = Mutex<[HTTPResponse]>([])
        func add(_ r: HTTPResponse) { all.withLock { $0.append(r) } }
        var list: [HTTPResponse] { all.withLock { $0 } }
    }

    static func start(threads: Int, _ handler: @escaping RequestHandler) throws -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        configuration.threads = threads
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        return server
    }

    @Test func deferredAnswersHoldNoHandlerThread() async throws {
        let gate = Gate()
        // One handler thread: eight requests waiting on it would leave none for `/now`.
        let server = try Self.start(threads: 1) { request in
            guard request.path == "/later" else { return .json(200, Array("now".utf8)) }
            return .later {
                await gate.pass()
                return ServerResponse(status: 202, body: Array("later".utf8))
            }
        }
        let url = "http://127.0.0.1:\(server.port)"
        let answers = Responses()
        for _ in 0..<8 {
            Task.detached {
                if let r = try? await CurlTransport().send(HTTPRequest(method: .get, url: url + "/later")) {
                    answers.add(r)
                }
            }
        }
        await eventually("eight deferred answers waiting") { gate.waiters == 8 }
        let now = try await CurlTransport().send(HTTPRequest(method: .get, url: url + "/now"))
        #expect(now.status == 200 && now.body == Array("now".utf8))
        #expect(answers.list.isEmpty, "answered while every deferred one still waited")
        gate.openIt()
        await eventually("the deferred ones answered") { answers.list.count == 8 }
        #expect(answers.list.allSatisfy { $0.status == 202 && $0.body == Array("later".utf8) })
        server.stopAccepting()
        server.stop()
    }

    @Test func aDeferredAnswerDeferredAgainIsA500() async throws {
        let server = try Self.start(threads: 1) { _ in .later { .later { ServerResponse(status: 200) } } }
        let r = try await CurlTransport().send(HTTPRequest(method: .get, url: "http://127.0.0.1:\(server.port)/"))
        #expect(r.status == 500)
        server.stop()
    }

    @Test func stopWaitsForADeferredAnswerToGoOut() async throws {
        let gate = Gate()
        let server = try Self.start(threads: 1) { _ in
            .later {
                await gate.pass()
                return ServerResponse(status: 200, body: Array("done".utf8))
            }
        }
        let port = server.port
        let answer = Task.detached {
            try await CurlTransport().send(HTTPRequest(method: .get, url: "http://127.0.0.1:\(port)/"))
        }
        await eventually("the work started") { gate.waiters == 1 }
        server.stopAccepting()
        let stopped = Gate()
        let stopper = Task.detached { [server = UncheckedBox(server)] in
            server.value.stop()
            stopped.openIt()
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!stopped.isOpen, "stop waits while the deferred work runs")
        gate.openIt()
        await stopper.value
        #expect(try await answer.value.body == Array("done".utf8))
    }
}

/// The server is not Sendable: one owner starts and stops it; here the stopping task is that owner.
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
