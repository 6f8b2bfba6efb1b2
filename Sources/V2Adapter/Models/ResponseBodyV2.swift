/// What Apple POSTs: `{"signedPayload": "<JWS>"}`.
public struct ResponseBodyV2: Codable, Sendable, Hashable {
    public var signedPayload: String?
    public init(signedPayload: String?) { self.signedPayload = signedPayload }
}
