import HTTPClient
import TestSupport
import Testing

@Suite struct ScriptedTransportTests {
    @Test func answersFromTheClosureAndRecordsRequestsInOrder() async throws {
        let transport = ScriptedTransport { request throws(HTTPClientError) in
            HTTPResponse(status: request.method == .post ? 201 : 200, body: Array(request.url.utf8))
        }
        let first = try await transport.send(HTTPRequest(method: .post, url: "https://a.example/1", body: [1]))
        let second = try await transport.send(HTTPRequest(method: .get, url: "https://a.example/2"))
        #expect(first == HTTPResponse(status: 201, body: Array("https://a.example/1".utf8)))
        #expect(second.status == 200)
        #expect(transport.requests.map(\.url) == ["https://a.example/1", "https://a.example/2"])
        #expect(transport.requests.first?.body == [1])
    }

    @Test func errorsFromTheClosureReachTheCallerTyped() async throws {
        let transport = ScriptedTransport { _ throws(HTTPClientError) in throw HTTPClientError(.timeout, "scripted") }
        await #expect(throws: HTTPClientError(.timeout, "")) {
            try await transport.send(HTTPRequest(method: .get, url: "https://a.example/"))
        }
        #expect(transport.requests.count == 1)
    }

    @Test func cannedResultsComeBackInOrderAndRunningOutFails() async throws {
        let transport = ScriptedTransport(results: [
            .success(HTTPResponse(status: 503)), .failure(HTTPClientError(.connectionFailed, "scripted")),
            .success(HTTPResponse(status: 200, body: [7])),
        ])
        let request = HTTPRequest(method: .post, url: "https://buy.itunes.apple.com/verifyReceipt")
        #expect(try await transport.send(request).status == 503)
        await #expect(throws: HTTPClientError(.connectionFailed, "")) { try await transport.send(request) }
        #expect(try await transport.send(request).body == [7])
        do {
            _ = try await transport.send(request)
            Issue.record("a fourth request should find the script exhausted")
        } catch {
            #expect(error.code == .transport)
            #expect(error.reason.hasSuffix("no scripted result left for POST \(request.url)"))
        }
        #expect(transport.requests.count == 4)
    }

    @Test func concurrentSendsAreAllRecorded() async throws {
        let transport = ScriptedTransport { request throws(HTTPClientError) in
            HTTPResponse(status: 200, body: request.body)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let response = try await transport.send(
                        HTTPRequest(method: .post, url: "https://a.example/", body: [UInt8(i)])
                    )
                    #expect(response.body == [UInt8(i)])
                }
            }
            try await group.waitForAll()
        }
        #expect(transport.requests.map { $0.body[0] }.sorted() == (0..<64).map(UInt8.init))
    }
}
