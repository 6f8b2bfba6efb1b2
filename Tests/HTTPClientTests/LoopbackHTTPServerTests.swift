import HTTPClient
import TestSupport
import Testing

/// The test server's own guarantees that other suites rely on.
@Suite struct LoopbackHTTPServerTests {
    @Test func stopClosesOpenConnectionsAndWakesAHangPromptly() async throws {
        let server = try LoopbackHTTPServer { _ in .hang(.seconds(30)) }
        let transport = CurlTransport()
        async let outcome: HTTPClientError? = {
            do throws(HTTPClientError) {
                _ = try await transport.send(HTTPRequest(method: .get, url: server.url(), timeoutMillis: 10_000))
                return nil
            } catch {
                return error
            }
        }()
        await eventually("the request at the server") { !server.requests.isEmpty }
        let clock = ContinuousClock()
        let start = clock.now
        server.stop()
        let error = await outcome
        #expect(start.duration(to: clock.now) < .seconds(5))  // well below the hang; room for a loaded machine
        #expect(error?.code == .protocolError)  // the client sees the connection closed without a response
    }

    @Test func droppingTheServerStopsItAndFreesThePort() async throws {
        var server: LoopbackHTTPServer? = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let url = try #require(server).url()
        #expect(try await CurlTransport().send(HTTPRequest(method: .get, url: url)).status == 200)
        server = nil  // deinit stops it
        await #expect(throws: HTTPClientError(.connectionFailed, "")) {
            try await CurlTransport().send(HTTPRequest(method: .get, url: url))
        }
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnectionAndHonoursConnectionClose() async throws {
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.body) }
        let transport = CurlTransport()
        _ = try await transport.send(HTTPRequest(method: .post, url: server.url("/a"), body: [1]))
        _ = try await transport.send(
            HTTPRequest(method: .post, url: server.url("/b"), headers: [HTTPHeader("Connection", "close")], body: [2])
        )
        let last = try await transport.send(HTTPRequest(method: .post, url: server.url("/c"), body: [3]))
        #expect(last.body == [3])
        #expect(server.requests.map(\.path) == ["/a", "/b", "/c"])
        #expect(server.connectionCount == 2)  // /a and /b shared one; "Connection: close" forced a new one for /c
    }

    @Test func responseDelayHoldsTheResponseBack() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, delay: .milliseconds(150)) }
        let clock = ContinuousClock()
        let start = clock.now
        let response = try await CurlTransport().send(HTTPRequest(method: .get, url: server.url()))
        #expect(response.status == 200)
        #expect(start.duration(to: clock.now) >= .milliseconds(150))
    }
}
