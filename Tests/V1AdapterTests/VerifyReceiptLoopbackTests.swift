import HTTPClient
import Synchronization
import TestSupport
import Testing
import V1Adapter

/// verifyReceipt over real HTTP against a fake Apple endpoint on 127.0.0.1 (production at /verifyReceipt, sandbox
/// at /sandbox/verifyReceipt): status codes, slow answers, garbage and dropped connections.
@Suite struct VerifyReceiptLoopbackTests {
    static let secret = SharedSecret(name: "APP_SHARED_SECRET", value: "0123456789abcdef0123456789abcdef")

    /// A client of the fake: short timeouts, no real sleeping between attempts.
    static func client(
        _ server: LoopbackHTTPServer,
        attempts: Int = 3,
        timeoutMillis: Int = 2_000
    ) -> VerifyReceiptClient {
        VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(
                productionURL: server.url("/verifyReceipt"),
                sandboxURL: server.url("/sandbox/verifyReceipt"),
                maxAttempts: attempts,
                timeoutMillis: timeoutMillis
            ),
            sleep: { _ in },
            jitter: { 0 }
        )
    }

    static func json(_ text: String) -> LoopbackHTTPServer.Action {
        .respond(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: Array(text.utf8))
    }

    static func code(_ client: VerifyReceiptClient) async -> String {
        do {
            let a = try await client.verify(receiptData: "cmVjZWlwdA==", sharedSecret: secret)
            return "ok \(a.status)\(a.usedSandbox ? " sandbox" : "")"
        } catch {
            return error.code.rawValue
        }
    }

    @Test func sandboxReceiptTakesTheProductionThenSandboxRoute() async throws {
        let server = try LoopbackHTTPServer { r in
            r.path == "/verifyReceipt"
                ? Self.json(#"{"status":21007}"#)
                : Self.json(#"{"status":0,"environment":"Sandbox","latest_receipt_info":[]}"#)
        }
        #expect(await Self.code(Self.client(server)) == "ok 0 sandbox")
        #expect(server.requests.map(\.path) == ["/verifyReceipt", "/sandbox/verifyReceipt"])
        let sent = String(decoding: server.requests[0].body, as: UTF8.self)
        #expect(sent.contains("\"password\":\"0123456789abcdef0123456789abcdef\""))
        #expect(server.requests[0].header("Content-Type") == "application/json")
    }

    @Test(arguments: [
        (21002, "receipt_invalid", 3), (21003, "receipt_invalid", 1), (21004, "receipt_config_error", 1),
        (21005, "apple_unavailable", 3), (21009, "apple_unavailable", 3), (21010, "receipt_invalid", 1),
    ])
    func eachStatusDoesWhatDesignSays(_ status: Int, _ expected: String, _ requests: Int) async throws {
        let server = try LoopbackHTTPServer { _ in Self.json("{\"status\":\(status)}") }
        #expect(await Self.code(Self.client(server)) == expected)
        #expect(server.requests.count == requests)
    }

    @Test func productionReceiptSentToTheSandboxReturnsToProduction() async throws {
        // 21007 at production, then 21008 at the sandbox (Apple's routing bounced), then production answers.
        let calls = Mutex(0)
        let server = try LoopbackHTTPServer { r in
            let n = calls.withLock { c in
                c += 1
                return c
            }
            if r.path == "/sandbox/verifyReceipt" { return Self.json(#"{"status":21008}"#) }
            return n == 1 ? Self.json(#"{"status":21007}"#) : Self.json(#"{"status":0,"latest_receipt_info":[]}"#)
        }
        #expect(await Self.code(Self.client(server)) == "ok 0")
        #expect(server.requests.map(\.path) == ["/verifyReceipt", "/sandbox/verifyReceipt", "/verifyReceipt"])
    }

    @Test func expiredIOS6AnswerAndNonRetryableInternalError() async throws {
        let expired = try LoopbackHTTPServer { _ in
            Self.json(#"{"status":21006,"latest_expired_receipt_info":{"product_id":"p"}}"#)
        }
        #expect(await Self.code(Self.client(expired)) == "ok 21006")
        let internalError = try LoopbackHTTPServer { _ in Self.json(#"{"status":21120,"is-retryable":0}"#) }
        #expect(await Self.code(Self.client(internalError)) == "apple_unavailable")
        #expect(internalError.requests.count == 1)
    }

    @Test func retryableInternalErrorThenSuccess() async throws {
        let calls = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let n = calls.withLock { c in
                c += 1
                return c
            }
            return n == 1
                ? Self.json(#"{"status":21100,"is-retryable":1}"#)
                : Self.json(#"{"status":0,"latest_receipt_info":[]}"#)
        }
        #expect(await Self.code(Self.client(server)) == "ok 0")
        #expect(server.requests.count == 2)
    }

    @Test func slowAnswersTimeOutAndAreRetried() async throws {
        let calls = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let n = calls.withLock { c in
                c += 1
                return c
            }
            return n == 1 ? .hang(.seconds(20)) : Self.json(#"{"status":0,"latest_receipt_info":[]}"#)
        }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await Self.code(Self.client(server, timeoutMillis: 300)) == "ok 0")
        // The 300 ms timeout fired: far sooner than the 20 s silence (generous for a loaded machine).
        #expect(clock.now - start < .seconds(8))
    }

    @Test func alwaysSlowIsUnavailable() async throws {
        let server = try LoopbackHTTPServer { _ in
            .respond(status: 200, body: Array(#"{"status":0}"#.utf8), delay: .seconds(2))
        }
        #expect(await Self.code(Self.client(server, attempts: 2, timeoutMillis: 200)) == "apple_unavailable")
    }

    @Test func garbageAndDroppedConnectionsAreUnavailable() async throws {
        let garbage = try LoopbackHTTPServer { _ in .sendRaw(Array("HELLO I AM NOT HTTP\r\n\r\n".utf8)) }
        #expect(await Self.code(Self.client(garbage)) == "apple_unavailable")
        #expect(garbage.requests.count == 3)
        let dropped = try LoopbackHTTPServer { _ in .closeWithoutResponse }
        #expect(await Self.code(Self.client(dropped)) == "apple_unavailable")
        let html = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array("<html>maintenance</html>".utf8)) }
        #expect(await Self.code(Self.client(html)) == "apple_unavailable")
        let error = try LoopbackHTTPServer { _ in .respond(status: 503, body: []) }
        #expect(await Self.code(Self.client(error)) == "apple_unavailable")
    }

    @Test func refusedConnectionIsUnavailable() async throws {
        let server = try LoopbackHTTPServer { _ in .closeWithoutResponse }
        let url = server.url("/verifyReceipt")
        server.stop()
        let client = VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(productionURL: url, sandboxURL: url, maxAttempts: 2),
            sleep: { _ in },
            jitter: { 0 }
        )
        #expect(await Self.code(client) == "apple_unavailable")
    }
}
