public import HTTPServer

/// The receipt path's routes on the public listener (docs/architecture.md, "The endpoint"): Apple's verifyReceipt
/// paths, answered per bundle (docs/operations.md, "Moving the receipt path") — HTTP 200 whatever the status, as Apple
/// does; within the receipt path's own bounds and never on a handler thread: the answer may wait for Apple, and these
/// threads answer Apple's notifications.
extension ReceiptEndpoint {
    public typealias Route = (
        method: String, pattern: String, handle: @Sendable (ReceiptEndpoint, ServerRequest) -> ServerResponse
    )

    public static let routes: [Route] = [
        ("POST", "/verifyReceipt", { $0.respond($1, sandboxURL: false) }),
        ("POST", "/sandbox/verifyReceipt", { $0.respond($1, sandboxURL: true) }),
    ]

    /// Its answer to a receipt past the listener's body limit, per path: status 21002 (the receipt could not be
    /// read), HTTP 200.
    public static var tooLargeAnswers: [String: ServerResponse] {
        let malformed = ServerResponse.json(200, ReceiptAnswer.status(.malformed))
        return Dictionary(routes.map { ($0.pattern, malformed) }, uniquingKeysWith: { first, _ in first })
    }

    func respond(_ request: ServerRequest, sandboxURL: Bool) -> ServerResponse {
        let body = request.body
        guard let ticket = admit(from: request.remoteAddress) else { return .json(200, Self.busyAnswer) }
        return .later {
            let answer = await self.handle(body, sandboxURL: sandboxURL)
            self.release(ticket)
            return .json(200, answer)
        }
    }
}
