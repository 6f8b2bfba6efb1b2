import HTTPClient
import TestSupport
import Testing

/// Deadlines and size limits come from configuration and reach curl as C `long`s and `curl_off_t`s: at any value
/// a request completes, times out or is refused with a stable code — the process never traps.
@Suite struct ExtremeRequestSettingsTests {
    @Test func deadlinesAtIntsEndsStillCompleteARequest() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array("ok".utf8)) }
        let transport = CurlTransport()
        for (timeout, connect) in [
            (Int.max, Int.max), (Int.max, 5_000), (30_000, Int.max), (Int(Int32.max) + 1, Int(Int32.max) + 1),
        ] {
            let response = try await transport.send(
                HTTPRequest(method: .get, url: server.url("/"), timeoutMillis: timeout, connectTimeoutMillis: connect)
            )
            #expect(
                response.status == 200 && response.body == Array("ok".utf8),
                "timeout \(timeout), connect \(connect)"
            )
        }
    }

    @Test func nonPositiveDeadlinesMeanTheShortestOne() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let transport = CurlTransport()
        for value in [Int.min, -1, 0] {
            do {
                let response = try await transport.send(
                    HTTPRequest(method: .get, url: server.url("/"), timeoutMillis: value, connectTimeoutMillis: value)
                )
                #expect(response.status == 200)
            } catch {
                #expect(error.code == .timeout, "\(value): \(error)")
            }
        }
    }

    @Test(arguments: [Int.min, -1, 0])
    func aTransportWithoutPositiveConcurrencyStillSendsOneAtATime(_ limit: Int) async throws {
        // Before, CurlTransport(maxConcurrentTransfers: 0) hit a precondition: a trap from a command-line number.
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array("ok".utf8)) }
        let transport = CurlTransport(maxConcurrentTransfers: limit)
        async let a = transport.send(HTTPRequest(method: .get, url: server.url("/a")))
        async let b = transport.send(HTTPRequest(method: .get, url: server.url("/b")))
        let (ra, rb) = try await (a, b)
        #expect(ra.status == 200 && rb.status == 200)
    }

    @Test func sizeLimitsAtIntsEnds() async throws {
        let server = try LoopbackHTTPServer { r in
            r.path == "/empty" ? .respond(status: 204) : .respond(status: 200, body: Array("body".utf8))
        }
        let transport = CurlTransport()
        let unlimited = try await transport.send(
            HTTPRequest(method: .get, url: server.url("/"), maxResponseBytes: .max)
        )
        #expect(unlimited.body == Array("body".utf8))
        for limit in [Int.min, -1, 0] {
            do {
                _ = try await transport.send(HTTPRequest(method: .get, url: server.url("/"), maxResponseBytes: limit))
                Issue.record("a body arrived under a limit of \(limit)")
            } catch {
                #expect(error.code == .responseTooLarge, "\(limit)")
            }
            let empty = try await transport.send(
                HTTPRequest(method: .get, url: server.url("/empty"), maxResponseBytes: limit)
            )
            #expect(empty.status == 204 && empty.body.isEmpty)
        }
    }
}
