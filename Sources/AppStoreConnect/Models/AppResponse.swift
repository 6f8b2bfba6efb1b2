/// `GET /v1/apps/{id}` and `PATCH /v1/apps/{id}`: `{"data": App, "links": {"self"}}`.
public struct AppResponse: Sendable, Hashable, Codable {
    public var data: AppResource
    public var links: AppResource.Links?
    public init(data: AppResource, links: AppResource.Links? = nil) { (self.data, self.links) = (data, links) }
}
