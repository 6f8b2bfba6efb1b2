public import HTTPClient
internal import WireJSON

/// Apple's verifyReceipt with its status semantics (docs/architecture.md, "V1 authentication"): production first, `21007` → sandbox, `21008` →
/// production; transient answers retried with exponential backoff and jitter, bounded; every outcome either a
/// parsed answer or a stable error code. Never called on the request path.
public struct VerifyReceiptClient: Sendable {
    public struct Configuration: Sendable {
        public var productionURL: String
        public var sandboxURL: String
        /// Attempts per receipt for transient failures (the 21007/21008 hop does not count) and the backoff between
        /// them: ``RetryPolicy/verifyReceiptClient`` unless the initializer's arguments say otherwise.
        public var retry: RetryPolicy
        public var timeoutMillis: Int
        public var maxResponseBytes: Int

        public init(
            productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
            sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt",
            maxAttempts: Int = RetryPolicy.verifyReceiptClient.maxAttempts,
            baseDelay: Duration = RetryPolicy.verifyReceiptClient.baseDelay,
            maxDelay: Duration = RetryPolicy.verifyReceiptClient.maxDelay,
            timeoutMillis: Int = 15_000,
            maxResponseBytes: Int = 8 * 1024 * 1024
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.retry = RetryPolicy.verifyReceiptClient
            (retry.maxAttempts, retry.baseDelay, retry.maxDelay) = (max(1, maxAttempts), baseDelay, maxDelay)
            self.timeoutMillis = timeoutMillis
            self.maxResponseBytes = maxResponseBytes
        }
    }

    /// A usable answer: status 0, or 21006 (valid receipt, expired subscription).
    public struct Answer: Sendable {
        public let response: VerifyReceiptResponse
        public let status: Int
        /// Which endpoint gave it.
        public let usedSandbox: Bool
        /// HTTP exchanges it took.
        public let attempts: Int
    }

    let transport: any HTTPTransport
    public let configuration: Configuration
    let sleep: @Sendable (Duration) async -> Void
    let jitter: @Sendable () -> Double

    /// `sleep` and `jitter` (a value in [0, 1)) are injected so tests run instantly and deterministically.
    public init(
        transport: any HTTPTransport,
        configuration: Configuration = .init(),
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.transport = transport
        self.configuration = configuration
        self.sleep = sleep
        self.jitter = jitter
    }

    /// Verifies `receiptData` (base64) with the app's shared secret.
    public func verify(receiptData: String, sharedSecret: SharedSecret) async throws(V1AdapterError) -> Answer {
        guard !receiptData.isEmpty else { throw V1AdapterError(.receiptInvalid, "no receipt to verify") }
        var body: [UInt8] = Array("{\"receipt-data\":".utf8)
        body += JSONValue.quoted(receiptData)
        body += Array(",\"password\":".utf8)
        body += JSONValue.quoted(sharedSecret.revealedValue)
        body += Array(",\"exclude-old-transactions\":false}".utf8)

        var sandbox = false
        var hops = 0
        var attempts = 0
        var exchanges = 0
        var lastFailure = V1AdapterError(.appleUnavailable, "no attempt made")
        while attempts < configuration.retry.maxAttempts {
            if attempts > 0 { await sleep(configuration.retry.delay(afterAttempt: attempts, jitter: jitter())) }
            attempts += 1
            exchanges += 1
            let request = HTTPRequest(
                method: .post,
                url: sandbox ? configuration.sandboxURL : configuration.productionURL,
                headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "application/json")],
                body: body,
                timeoutMillis: configuration.timeoutMillis,
                maxResponseBytes: configuration.maxResponseBytes
            )
            let response: HTTPResponse
            do { response = try await transport.send(request) } catch {
                lastFailure = V1AdapterError(.appleUnavailable, "verifyReceipt unreachable: \(error.code)")
                continue
            }
            guard response.status == 200 else {
                lastFailure = V1AdapterError(.appleUnavailable, "verifyReceipt answered HTTP \(response.status)")
                continue
            }
            let answer: VerifyReceiptResponse
            do { answer = try JSONValueDecoder().decode(VerifyReceiptResponse.self, from: response.body) } catch {
                lastFailure = V1AdapterError(.appleUnavailable, "verifyReceipt answered something that is not its JSON")
                continue
            }
            guard let status = answer.statusCode else {
                lastFailure = V1AdapterError(.appleUnavailable, "verifyReceipt answered without a status")
                continue
            }
            switch VerifyReceiptStatus(status) {
            case .ok, .expired:
                return Answer(response: answer, status: status, usedSandbox: sandbox, attempts: exchanges)
            case .sandboxReceipt where !sandbox, .productionReceipt where sandbox:
                // The receipt belongs to the other environment: ask there (not a failed attempt), at most twice.
                hops += 1
                guard hops <= 2 else {
                    throw V1AdapterError(
                        .receiptInvalid,
                        "environments disagree about the receipt",
                        appleStatus: status
                    )
                }
                sandbox.toggle()
                attempts -= 1
            case .sandboxReceipt, .productionReceipt:
                throw V1AdapterError(.receiptInvalid, "receipt refused by both environments", appleStatus: status)
            case .malformed:
                lastFailure = V1AdapterError(
                    .receiptInvalid,
                    "receipt data malformed (after retries)",
                    appleStatus: status
                )
            case .unavailable, .internalError:
                lastFailure = V1AdapterError(
                    .appleUnavailable,
                    "Apple's receipt service unavailable",
                    appleStatus: status
                )
            case let s where s.isInternalDataAccessError:
                lastFailure = V1AdapterError(.appleUnavailable, "Apple internal data access error", appleStatus: status)
                if answer.isRetryable?.bool != true { throw lastFailure }
            case .notAuthenticated, .notAuthorized:
                throw V1AdapterError(
                    .receiptInvalid,
                    "receipt could not be authenticated or its account is gone",
                    appleStatus: status
                )
            case .wrongSecret:
                throw V1AdapterError(
                    .receiptConfigError,
                    "the shared secret does not match the one in App Store Connect",
                    appleStatus: status
                )
            case .unreadable:
                throw V1AdapterError(.receiptInvalid, "Apple could not read the request", appleStatus: status)
            default:
                throw V1AdapterError(
                    .appleUnavailable,
                    "verifyReceipt status Apple does not document",
                    appleStatus: status
                )
            }
        }
        throw lastFailure
    }
}
