import Canonical
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import HTTPClient

/// `CurlTransport` against `LoopbackHTTPServer` (a fresh server and transport per test, so tests run in parallel).
///
/// The curl error numbers asserted below are what libcurl 7.88.1 (Debian, OpenSSL backend) reports; the reason text
/// carries them as "(curl error N)".
@Suite struct CurlTransportTests {
    let transport = CurlTransport()

    /// The error `send` threw, or nil when a response came back.
    private func failure(of request: HTTPRequest, via transport: CurlTransport? = nil) async -> HTTPClientError? {
        do {
            _ = try await (transport ?? self.transport).send(request)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Requests and responses

    @Test func postWithHeadersAndBodyArrivesByteExactAndTheResponseComesBack() async throws {
        let server = try LoopbackHTTPServer { _ in
            .respond(
                status: 201,
                headers: [HTTPHeader("X-Reply", "yes"), HTTPHeader("Content-Type", "text/plain")],
                body: Array("created\r\n\u{0}tail".utf8)
            )
        }
        let body = (0...255).map(UInt8.init) + Array(#"{"receipt-data":"Zm9v"}"#.utf8) + [0x0D, 0x0A, 0x00]
        let response = try await transport.send(
            HTTPRequest(
                method: .post,
                url: server.url("/verifyReceipt?sandbox=1"),
                headers: [
                    HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Trace", "a b:c"),
                    HTTPHeader("X-Empty", ""),
                ],
                body: body
            )
        )

        let received = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(received.method == "POST")
        #expect(received.path == "/verifyReceipt?sandbox=1")
        #expect(received.body == body)
        #expect(received.header("Content-Length") == String(body.count))
        #expect(received.header("Content-Type") == "application/json")
        #expect(received.header("X-Trace") == "a b:c")
        #expect(received.header("X-Empty") == "")
        #expect(received.header("Expect") == nil)

        #expect(response.status == 201)
        #expect(response.header("x-reply") == "yes")
        #expect(response.header("Content-Type") == "text/plain")
        #expect(response.header("Content-Length") == "14")
        #expect(response.body == Array("created\r\n\u{0}tail".utf8))
    }

    @Test func getSendsNoBodyEvenWhenTheRequestHasOne() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array("pong".utf8)) }
        let response = try await transport.send(
            HTTPRequest(method: .get, url: server.url("/ping"), body: Array("ignored".utf8))
        )
        let received = try #require(server.requests.first)
        #expect(received.method == "GET")
        #expect(received.body.isEmpty)
        #expect(received.header("Content-Length") == nil)
        #expect(received.header("Content-Type") == nil)
        #expect(response.body == Array("pong".utf8))
    }

    /// An empty body still goes out as `Content-Length: 0` (a null POSTFIELDS would make curl read stdin), and curl's
    /// form-encoded default Content-Type is not added.
    @Test func anEmptyPostSendsContentLengthZeroAndNoDefaultContentType() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        _ = try await transport.send(HTTPRequest(method: .post, url: server.url("/empty")))
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.header("Content-Length") == "0")
        #expect(received.header("Content-Type") == nil)
        #expect(received.body.isEmpty)
    }

    /// Every request says who sends it, `iap-gateway/<version>`, unless it carries a User-Agent of its own (sent
    /// instead, once).
    @Test(arguments: [HTTPRequest.Method.get, .post, .put, .patch, .delete])
    func everyRequestCarriesTheGatewaysUserAgent(_ method: HTTPRequest.Method) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        _ = try await transport.send(HTTPRequest(method: method, url: server.url("/who"), body: Array("x".utf8)))
        _ = try await transport.send(
            HTTPRequest(method: method, url: server.url("/who"), headers: [HTTPHeader("user-agent", "probe/1")])
        )
        let requests = server.requests
        #expect(requests.count == 2)
        func userAgents(_ r: LoopbackHTTPServer.Request) -> [String] {
            r.headers.filter { $0.name.lowercased() == "user-agent" }.map { $0.value }
        }
        #expect(userAgents(requests[0]) == [GatewayVersion.userAgent])
        #expect(GatewayVersion.userAgent == "iap-gateway/\(GatewayVersion.string)")
        #expect(userAgents(requests[1]) == ["probe/1"])
    }

    @Test(arguments: [HTTPRequest.Method.put, .delete, .patch])
    func putPatchAndDeleteArriveWithTheirMethodAndBody(_ method: HTTPRequest.Method) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 204) }
        let response = try await transport.send(
            HTTPRequest(method: method, url: server.url("/item/1"), body: Array("payload".utf8))
        )
        let received = try #require(server.requests.first)
        #expect(received.method == method.rawValue)
        #expect(received.body == Array("payload".utf8))
        #expect(response.status == 204)
    }

    @Test func deleteWithoutABodySendsNoContentLength() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        _ = try await transport.send(HTTPRequest(method: .delete, url: server.url("/item/2")))
        let received = try #require(server.requests.first)
        #expect(received.method == "DELETE")
        #expect(received.header("Content-Length") == nil)
    }

    @Test(arguments: [400, 401, 404, 429, 500, 503])
    func nonSuccessStatusesAreResponsesNotErrors(_ status: Int) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: status, body: Array(#"{"status":21002}"#.utf8)) }
        let response = try await transport.send(
            HTTPRequest(method: .post, url: server.url("/verifyReceipt"), body: [1])
        )
        #expect(response.status == status)
        #expect(response.body == Array(#"{"status":21002}"#.utf8))
    }

    @Test func redirectsAreReturnedNotFollowed() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/old"
                ? .respond(status: 302, headers: [HTTPHeader("Location", "/new")]) : .respond(status: 200)
        }
        let response = try await transport.send(HTTPRequest(method: .get, url: server.url("/old")))
        #expect(response.status == 302)
        #expect(response.header("Location") == "/new")
        #expect(server.requests.map(\.path) == ["/old"])
    }

    @Test func sequentialRequestsReuseOneKeepAliveConnection() async throws {
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: Array(request.path.utf8)) }
        for i in 0..<4 {
            let response = try await transport.send(
                HTTPRequest(method: .post, url: server.url("/n/\(i)"), body: [UInt8(i)])
            )
            #expect(response.body == Array("/n/\(i)".utf8))
        }
        #expect(server.requests.count == 4)
        #expect(server.connectionCount == 1)
    }

    @Test func onlyTheFinalResponsesHeadersAreReturnedAndTrimmed() async throws {
        let raw =
            "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nX-Final:   two words  \r\nContent-Length: 2\r\n\r\nok"
        let server = try LoopbackHTTPServer { _ in .sendRaw(Array(raw.utf8)) }
        let response = try await transport.send(HTTPRequest(method: .get, url: server.url()))
        #expect(response.status == 200)
        #expect(response.header("X-Interim") == nil)
        #expect(response.header("X-Final") == "two words")
        #expect(response.headers.map(\.name) == ["X-Final", "Content-Length"])
        #expect(response.body == Array("ok".utf8))
    }

    // MARK: Limits and deadlines

    /// A declared `Content-Length` over the limit fails before the body is read (curl 63, MAXFILESIZE); a body
    /// without a length is cut off by the write callback (curl 23). Both are `response_too_large`.
    @Test(arguments: [true, false])
    func aResponseLargerThanTheLimitFailsAsResponseTooLarge(declaresLength: Bool) async throws {
        let body = [UInt8](repeating: 0x61, count: 70_000)
        let server = try LoopbackHTTPServer { _ in
            declaresLength
                ? .respond(status: 200, body: body)
                : .sendRaw(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8) + body)
        }
        let error = await failure(of: HTTPRequest(method: .get, url: server.url(), maxResponseBytes: 65_536))
        #expect(error?.code == .responseTooLarge)
        #expect(error?.reason.contains(declaresLength ? "(curl error 63)" : "(curl error 23)") == true)
    }

    @Test func aResponseOfExactlyTheLimitIsAccepted() async throws {
        let body = [UInt8](repeating: 0x62, count: 65_536)
        let server = try LoopbackHTTPServer { _ in
            .sendRaw(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8) + body)
        }
        let response = try await transport.send(HTTPRequest(method: .get, url: server.url(), maxResponseBytes: 65_536))
        #expect(response.body == body)
    }

    @Test func aHangingServerTimesOutWithinTheDeadline() async throws {
        let server = try LoopbackHTTPServer { _ in .hang(.seconds(60)) }
        let clock = ContinuousClock()
        let start = clock.now
        let error = await failure(of: HTTPRequest(method: .post, url: server.url(), body: [1], timeoutMillis: 300))
        let elapsed = start.duration(to: clock.now)
        #expect(error?.code == .timeout)
        #expect(error?.reason.contains("(curl error 28)") == true)
        // Far below the server's 60 s silence, with room for a loaded 2-core machine running tests in parallel.
        #expect(elapsed < .seconds(20))
        #expect(server.requests.count == 1)
    }

    @Test func transfersInFlightNeverExceedTheConfiguredLimit() async throws {
        let inFlight = Mutex((current: 0, peak: 0))
        let server = try LoopbackHTTPServer { _ in
            inFlight.withLock {
                $0.current += 1
                $0.peak = max($0.peak, $0.current)
            }
            usleep(100_000)
            inFlight.withLock { $0.current -= 1 }
            return .respond(status: 200)
        }
        let limited = CurlTransport(maxConcurrentTransfers: 2)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<6 {
                group.addTask { try await limited.send(HTTPRequest(method: .get, url: server.url("/\(i)"))).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 6))
        #expect(inFlight.withLock { $0.peak } == 2)
        #expect(server.connectionCount == 2)  // two pooled handles, each keeping its connection
    }

    @Test func thirtyTwoConcurrentRequestsAllSucceed() async throws {
        let server = try LoopbackHTTPServer { request in
            .respond(status: 200, body: request.body + Array(request.path.utf8))
        }
        let bodies = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in 0..<32 {
                group.addTask {
                    let response = try await transport.send(
                        HTTPRequest(method: .post, url: server.url("/r\(i)"), body: Array("#\(i)".utf8))
                    )
                    return (i, response.body)
                }
            }
            return try await group.reduce(into: [Int: [UInt8]]()) { $0[$1.0] = $1.1 }
        }
        #expect(bodies.count == 32)
        for i in 0..<32 { #expect(bodies[i] == Array("#\(i)/r\(i)".utf8)) }
        #expect(server.requests.count == 32)
        #expect(server.connectionCount <= 16)  // the default transfer limit bounds connections too
    }

    @Test func cancellingTheCallingTaskAbortsTheTransfer() async throws {
        let server = try LoopbackHTTPServer { _ in .hang(.seconds(60)) }
        let task = Task { [transport] () -> HTTPClientError? in
            do throws(HTTPClientError) {
                _ = try await transport.send(HTTPRequest(method: .get, url: server.url()))
                return nil
            } catch {
                return error
            }
        }
        await eventually("the request at the server") { !server.requests.isEmpty }
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        let error = await task.value
        // curl polls its progress callback about once a second; room for load
        #expect(start.duration(to: clock.now) < .seconds(5))
        #expect(error?.code == .transport)
        #expect(error?.reason.hasPrefix("request cancelled") == true)
    }

    // MARK: Failures

    @Test func aRefusedConnectionFailsAsConnectionFailed() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let url = server.url("/gone")
        let clock = ContinuousClock()
        let start = clock.now
        server.stop()  // closes the listener before returning
        #expect(start.duration(to: clock.now) < .seconds(3))
        let error = await failure(of: HTTPRequest(method: .get, url: url))
        #expect(error?.code == .connectionFailed)
        #expect(error?.reason.contains("(curl error 7)") == true)
        #expect(server.connectionCount == 0)
    }

    /// The server reads the request and closes without a byte: curl reports CURLE_GOT_NOTHING (52, "Empty reply
    /// from server").
    @Test func aDroppedConnectionIsAProtocolError() async throws {
        let server = try LoopbackHTTPServer { _ in .closeWithoutResponse }
        let error = await failure(of: HTTPRequest(method: .post, url: server.url(), body: [1, 2, 3]))
        #expect(error?.code == .protocolError)
        #expect(error?.reason.contains("(curl error 52)") == true)
    }

    /// A reply without a status line is HTTP/0.9 to curl, which refuses it with CURLE_UNSUPPORTED_PROTOCOL (1,
    /// "Received HTTP/0.9 when not allowed").
    @Test func garbageInsteadOfHTTPIsAProtocolError() async throws {
        let garbage = Array("SSH-2.0-OpenSSH_9.2\r\n\u{1}\u{2}garbage\r\n\r\n".utf8)
        let server = try LoopbackHTTPServer { _ in .sendRaw(garbage) }
        let error = await failure(of: HTTPRequest(method: .get, url: server.url()))
        #expect(error?.code == .protocolError)
        #expect(error?.reason.contains("(curl error 1)") == true)
    }

    @Test func aTruncatedBodyIsAProtocolError() async throws {
        let truncated = Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".utf8)
        let server = try LoopbackHTTPServer { _ in .sendRaw(truncated) }
        let error = await failure(of: HTTPRequest(method: .get, url: server.url()))
        #expect(error?.code == .protocolError)
        #expect(error?.reason.contains("(curl error 18)") == true)  // PARTIAL_FILE
    }

    /// The plain server answers the ClientHello with `400 Bad Request` in clear text, which OpenSSL rejects
    /// (CURLE_SSL_CONNECT_ERROR, 35, "wrong version number").
    @Test func httpsToAPlainHTTPServerFailsQuicklyAsTLSFailure() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let url = "https://127.0.0.1:\(server.port)/"
        let clock = ContinuousClock()
        let start = clock.now
        let error = await failure(of: HTTPRequest(method: .get, url: url, timeoutMillis: 20_000))
        // Fails on the handshake, not on the (20 s) deadline; generous for a loaded machine.
        #expect(start.duration(to: clock.now) < .seconds(8))
        #expect(error?.code == .tlsFailure)
        #expect(error?.reason.contains("(curl error 35)") == true)
        #expect(server.requests.isEmpty)
    }

    @Test func anUnreadableCABundleFailsAsTLSFailure() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let pinned = CurlTransport(caBundlePath: "/nonexistent/iap-gateway-test-ca.pem")
        let error = await failure(of: HTTPRequest(method: .get, url: "https://127.0.0.1:\(server.port)/"), via: pinned)
        #expect(error?.code == .tlsFailure)
        #expect(error?.reason.contains("(curl error 77)") == true)  // SSL_CACERT_BADFILE
    }

    @Test(arguments: [
        "ftp://127.0.0.1/file", "file:///etc/passwd", "gopher://127.0.0.1/", "dict://127.0.0.1:11211/stat",
        "HTTPX://example.com/", "http:/example.com", "//example.com/", "example.com/path", "", "http://", "https:///x",
        "http://exa mple.com/", "http://example.com/\r\nX-Injected: 1",
    ])
    func nonHTTPURLsAreRejectedBeforeCurl(_ url: String) async throws {
        let error = await failure(of: HTTPRequest(method: .get, url: url))
        #expect(error?.code == .invalidURL)
    }

    @Test func upperCaseSchemesAreAccepted() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let response = try await transport.send(HTTPRequest(method: .get, url: "HTTP://127.0.0.1:\(server.port)/"))
        #expect(response.status == 200)
    }

    @Test(arguments: [
        HTTPHeader("X-Evil", "a\r\nX-Injected: 1"), HTTPHeader("X-Evil", "a\nb"), HTTPHeader("X-Evil", "a\u{0}b"),
        HTTPHeader("Bad Name", "v"), HTTPHeader("", "v"), HTTPHeader("X:Y", "v"),
    ])
    func headersThatCouldSmuggleLinesAreRejectedUnsent(_ header: HTTPHeader) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let error = await failure(of: HTTPRequest(method: .get, url: server.url(), headers: [header]))
        #expect(error?.code == .transport)
        #expect(error?.reason.contains("a\r\nX") == false)
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: ["drop", "garbage", "timeout", "tooLarge", "tls"])
    func errorDescriptionsNeverContainRequestSecrets(_ failureMode: String) async throws {
        let server = try LoopbackHTTPServer { _ in
            switch failureMode {
            case "drop": .closeWithoutResponse
            case "garbage": .sendRaw(Array("no http here\r\n\r\n".utf8))
            case "timeout": .hang(.seconds(5))
            default: .respond(status: 200, body: [UInt8](repeating: 0, count: 1000))
            }
        }
        let url = failureMode == "tls" ? "https://127.0.0.1:\(server.port)/verify" : server.url("/verify")
        let request = HTTPRequest(
            method: .post,
            url: url,
            headers: [HTTPHeader("Authorization", "Bearer SECRET")],
            body: Array(#"{"password":"SECRET"}"#.utf8),
            timeoutMillis: 300,
            maxResponseBytes: 10
        )
        let error = try #require(await failure(of: request))
        #expect(!error.description.contains("SECRET"))
        #expect(!error.reason.contains("SECRET"))
        #expect(error.description.contains("/verify"))  // the URL does appear
        if failureMode != "tls" {
            // The secret did travel, so the check above is not vacuous.
            #expect(server.requests.first?.header("Authorization") == "Bearer SECRET")
        }
    }

    // MARK: The CURLcode table (codes a loopback server cannot provoke)

    @Test(
        arguments: [
            (28, HTTPClientError.Code.timeout), (5, .connectionFailed), (6, .connectionFailed), (7, .connectionFailed),
            (35, .tlsFailure), (51, .tlsFailure), (53, .tlsFailure), (54, .tlsFailure), (58, .tlsFailure),
            (59, .tlsFailure), (60, .tlsFailure), (64, .tlsFailure), (66, .tlsFailure), (77, .tlsFailure),
            (80, .tlsFailure), (82, .tlsFailure), (83, .tlsFailure), (90, .tlsFailure), (91, .tlsFailure),
            (63, .responseTooLarge), (3, .invalidURL), (1, .protocolError), (8, .protocolError), (18, .protocolError),
            (52, .protocolError), (55, .protocolError), (56, .protocolError), (16, .protocolError),
            (92, .protocolError),
            (23, .transport), (42, .transport), (27, .transport), (2, .transport),
        ] as [(UInt32, HTTPClientError.Code)]
    )
    func curlErrorsMapToStableCodes(_ curlCode: UInt32, _ expected: HTTPClientError.Code) {
        #expect(CurlTransport.code(forCurlError: curlCode) == expected)
    }

    @Test func aWriteAbortIsResponseTooLargeOnlyWhenTheLimitCausedIt() {
        let request = HTTPRequest(method: .get, url: "http://127.0.0.1/", maxResponseBytes: 5)
        var outcome = CurlOutcome.setupFailure(23, "Failure writing output to destination")
        #expect(CurlTransport.judge(outcome, request) == .failure(HTTPClientError(.transport, "")))
        outcome.exceededLimit = true
        #expect(CurlTransport.judge(outcome, request) == .failure(HTTPClientError(.responseTooLarge, "")))
    }
}
