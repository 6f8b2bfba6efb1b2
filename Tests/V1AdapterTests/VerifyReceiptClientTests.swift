import Canonical
import HTTPClient
import Synchronization
import TestSupport
import Testing

@testable import V1Adapter

/// verifyReceipt's status semantics (docs/architecture.md, "V1 authentication") against a scripted transport: what is retried, what is
/// final, where the request goes, how long it waits.
@Suite struct VerifyReceiptClientTests {
    static let secret = SharedSecret(name: "APP_SHARED_SECRET", value: "0123456789abcdef0123456789abcdef")
    static let production = "https://buy.example/verifyReceipt"
    static let sandbox = "https://sandbox.example/verifyReceipt"

    /// A client whose sleeps are recorded instead of slept, with a fixed jitter.
    static func client(
        _ transport: ScriptedTransport,
        attempts: Int = 4,
        jitter: Double = 0.5
    )
        -> (VerifyReceiptClient, SleepBox)
    {
        let box = SleepBox()
        let client = VerifyReceiptClient(
            transport: transport,
            configuration: .init(
                productionURL: production,
                sandboxURL: sandbox,
                maxAttempts: attempts,
                baseDelay: .seconds(1),
                maxDelay: .seconds(30)
            ),
            sleep: { d in box.record(d) },
            jitter: { jitter }
        )
        return (client, box)
    }

    final class SleepBox: Sendable {
        let sleeps = Mutex<[Duration]>([])
        func record(_ d: Duration) { sleeps.withLock { $0.append(d) } }
        var recorded: [Duration] { sleeps.withLock { $0 } }
    }

    static func status(_ code: Int, retryable: Int? = nil) -> Result<HTTPResponse, HTTPClientError> {
        var body = "{\"status\":\(code)"
        if let retryable { body += ",\"is-retryable\":\(retryable)" }
        if code == 0 || code == 21006 { body += ",\"environment\":\"Production\",\"latest_receipt_info\":[]" }
        return .success(HTTPResponse(status: 200, body: Array((body + "}").utf8)))
    }

    static func outcome(
        _ results: [Result<HTTPResponse, HTTPClientError>],
        attempts: Int = 4
    ) async -> (String, ScriptedTransport) {
        let transport = ScriptedTransport(results: results)
        let (client, _) = client(transport, attempts: attempts)
        do {
            let answer = try await client.verify(receiptData: "cmVjZWlwdA==", sharedSecret: secret)
            return ("ok \(answer.status)\(answer.usedSandbox ? " sandbox" : "")", transport)
        } catch {
            return (error.code.rawValue, transport)
        }
    }

    @Test func validReceiptAnswersOnTheFirstAttempt() async {
        let (result, transport) = await Self.outcome([Self.status(0)])
        #expect(result == "ok 0")
        #expect(transport.requests.count == 1)
        let request = transport.requests[0]
        #expect(request.url == Self.production && request.method == .post)
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(
            body.contains("\"receipt-data\":\"cmVjZWlwdA==\"")
                && body.contains("\"password\":\"0123456789abcdef0123456789abcdef\"")
        )
    }

    @Test func sandboxReceiptIsResentToTheSandbox() async {
        let (result, transport) = await Self.outcome([Self.status(21007), Self.status(0)], attempts: 1)
        #expect(result == "ok 0 sandbox")
        #expect(transport.requests.map(\.url) == [Self.production, Self.sandbox])
    }

    @Test func productionReceiptAtTheSandboxGoesBackToProduction() async {
        let (result, transport) = await Self.outcome([Self.status(21007), Self.status(21008), Self.status(0)])
        #expect(result == "ok 0")
        #expect(transport.requests.map(\.url) == [Self.production, Self.sandbox, Self.production])
    }

    @Test func environmentsThatKeepDisagreeingEndTheLoop() async {
        let (result, transport) = await Self.outcome([
            Self.status(21007), Self.status(21008), Self.status(21007), Self.status(21008),
        ])
        #expect(result == "receipt_invalid")
        #expect(transport.requests.count == 3)
    }

    @Test(arguments: [
        (21002, "receipt_invalid"), (21005, "apple_unavailable"), (21009, "apple_unavailable"),
    ])
    func transientStatusesAreRetriedThenReported(_ status: Int, _ code: String) async {
        let (result, transport) = await Self.outcome(Array(repeating: Self.status(status), count: 4))
        #expect(result == code)
        #expect(transport.requests.count == 4)
        #expect(Set(transport.requests.map(\.url)) == [Self.production])
        // …and a retry that succeeds is a success.
        let (recovered, _) = await Self.outcome([Self.status(status), Self.status(status), Self.status(0)])
        #expect(recovered == "ok 0")
    }

    @Test func internalErrorsAreRetriedOnlyWhenAppleSaysSo() async {
        let (retried, t1) = await Self.outcome(Array(repeating: Self.status(21150, retryable: 1), count: 4))
        #expect(retried == "apple_unavailable" && t1.requests.count == 4)
        let (final, t2) = await Self.outcome([Self.status(21150, retryable: 0)])
        #expect(final == "apple_unavailable" && t2.requests.count == 1)
        let (recovered, _) = await Self.outcome([Self.status(21199, retryable: 1), Self.status(0)])
        #expect(recovered == "ok 0")
    }

    @Test(arguments: [
        (21003, "receipt_invalid"), (21010, "receipt_invalid"), (21004, "receipt_config_error"),
        (21000, "receipt_invalid"), (21299, "apple_unavailable"),
    ])
    func finalStatusesAreNotRetried(_ status: Int, _ code: String) async {
        let (result, transport) = await Self.outcome([Self.status(status), Self.status(0)])
        #expect(result == code)
        #expect(transport.requests.count == 1)
    }

    @Test func expiredIOS6ReceiptIsAnAnswer() async {
        let (result, _) = await Self.outcome([Self.status(21006)])
        #expect(result == "ok 21006")
    }

    @Test func transportFailuresHTTPErrorsAndGarbageAreRetriedThenUnavailable() async {
        let failures: [Result<HTTPResponse, HTTPClientError>] = [
            .failure(HTTPClientError(.timeout, "slow")), .success(HTTPResponse(status: 503)),
            .success(HTTPResponse(status: 200, body: Array("<html>".utf8))),
            .success(HTTPResponse(status: 200, body: Array("{}".utf8))),
        ]
        let (result, transport) = await Self.outcome(failures)
        #expect(result == "apple_unavailable" && transport.requests.count == 4)
        let (recovered, _) = await Self.outcome([failures[0], failures[1], Self.status(0)])
        #expect(recovered == "ok 0")
    }

    @Test func emptyReceiptIsInvalidWithoutAskingApple() async throws {
        let transport = ScriptedTransport(results: [Self.status(0)])
        let (client, _) = Self.client(transport)
        await #expect(throws: V1AdapterError(.receiptInvalid, "")) {
            try await client.verify(receiptData: "", sharedSecret: Self.secret)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test func retriesWaitBetweenAttemptsAndTheEnvironmentHopDoesNot() async throws {
        let transport = ScriptedTransport(results: [
            Self.status(21007), Self.status(21005), Self.status(21005), Self.status(0),
        ])
        let (client, sleeps) = Self.client(transport)
        let answer = try await client.verify(receiptData: "cmVjZWlwdA==", sharedSecret: Self.secret)
        #expect(answer.status == 0 && answer.usedSandbox && answer.attempts == 4)
        // The hop to the sandbox is immediate; the two 21005s wait 1 s and 2 s (× jitter 0.75).
        #expect(sleeps.recorded == [.milliseconds(750), .milliseconds(1500)])
    }

    @Test func backoffDoublesIsCappedAndJittered() {
        let transport = ScriptedTransport(results: [])
        for (jitter, factor) in [(0.0, 0.5), (0.5, 0.75), (0.999_999_9, 0.999_999_5)] {
            let (client, _) = Self.client(transport, jitter: jitter)
            let delays = (1...7).map { client.configuration.retry.delay(afterAttempt: $0, jitter: client.jitter()) }
            let expected: [Double] = [1, 2, 4, 8, 16, 30, 30].map { $0 * factor }
            for (d, e) in zip(delays, expected) {
                let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
                #expect(abs(seconds - e) < 0.001, "jitter \(jitter): \(seconds) vs \(e)")
            }
        }
    }

    @Test func absurdConfiguredDelaysDoNotTrapTheBackoff() async throws {
        // Before RetryPolicy's checked doubling, baseDelay · 2^20 overflowed Duration (and trapped) for a large base.
        for (base, cap) in [
            (Duration.seconds(Int64.max), Duration.seconds(Int64.max)), (.seconds(Int64.max), .seconds(30)),
            (.seconds(-5), .seconds(-5)), (.seconds(1), .seconds(Int64.min)),
        ] {
            let box = SleepBox()
            let client = VerifyReceiptClient(
                transport: ScriptedTransport(results: [Self.status(21005), Self.status(21005), Self.status(0)]),
                configuration: .init(
                    productionURL: Self.production,
                    sandboxURL: Self.sandbox,
                    maxAttempts: 3,
                    baseDelay: base,
                    maxDelay: cap
                ),
                sleep: { d in box.record(d) },
                jitter: { 0.5 }
            )
            for attempt in [1, 2, 21, 1000] {
                #expect(
                    client.configuration.retry.delay(afterAttempt: attempt, jitter: client.jitter()) <= max(cap, .zero)
                )
            }
            #expect(try await client.verify(receiptData: "cmVjZWlwdA==", sharedSecret: Self.secret).status == 0)
            #expect(box.recorded.count == 2 && box.recorded.allSatisfy { $0 >= .zero && $0 <= max(cap, .zero) })
        }
    }

    @Test func errorsNeverCarryTheSecretOrTheReceipt() async {
        let transport = ScriptedTransport(results: [Self.status(21004)])
        let (client, _) = Self.client(transport)
        do {
            _ = try await client.verify(receiptData: "cmVjZWlwdA==", sharedSecret: Self.secret)
            Issue.record("expected a failure")
        } catch {
            #expect(!"\(error)".contains("0123456789abcdef") && !"\(error)".contains("cmVjZWlwdA"))
            #expect(error.appleStatus == 21004)
        }
    }
}
