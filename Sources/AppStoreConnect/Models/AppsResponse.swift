/// `GET /v1/apps`: `{"data": [App], "links": {"self", "next"?}, "meta": {"paging": {"total", "limit"}}}`.
public struct AppsResponse: Sendable, Hashable, Codable {
    public struct Links: Sendable, Hashable, Codable {
        public var selfLink: String?
        public var next: String?
        enum CodingKeys: String, CodingKey {
            case next
            case selfLink = "self"
        }
        public init(selfLink: String?, next: String? = nil) { (self.selfLink, self.next) = (selfLink, next) }
    }
    public struct Meta: Sendable, Hashable, Codable {
        public struct Paging: Sendable, Hashable, Codable {
            public var total: Int?
            public var limit: Int?
            public init(total: Int?, limit: Int?) { (self.total, self.limit) = (total, limit) }
        }
        public var paging: Paging?
        public init(paging: Paging?) { self.paging = paging }
    }

    public var data: [AppResource]
    public var links: Links?
    public var meta: Meta?
    public init(data: [AppResource], links: Links? = nil, meta: Meta? = nil) {
        (self.data, self.links, self.meta) = (data, links, meta)
    }
}
