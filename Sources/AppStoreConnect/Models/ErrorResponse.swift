/// Apple's JSON:API error answer, `ErrorResponse`: `{"errors": [{"id", "status": "409", "code":
/// "ENTITY_ERROR.ATTRIBUTE.INVALID", "title", "detail", "source": {"pointer"} | {"parameter"}}]}`. Every member
/// is read as optional: an error answer is judged by its HTTP status, the members only explain it.
public struct ErrorResponse: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public struct Source: Sendable, Hashable, Codable {
            public var pointer: String?
            public var parameter: String?
            public init(pointer: String? = nil, parameter: String? = nil) {
                (self.pointer, self.parameter) = (pointer, parameter)
            }
        }
        public var id: String?
        /// The HTTP status, as a string (`"409"`).
        public var status: String?
        public var code: String?
        public var title: String?
        public var detail: String?
        public var source: Source?

        public init(
            id: String? = nil,
            status: String?,
            code: String?,
            title: String?,
            detail: String?,
            source: Source? = nil
        ) {
            (self.id, self.status, self.code, self.title, self.detail, self.source) = (
                id, status, code, title, detail, source
            )
        }
    }

    public var errors: [Item]
    public init(errors: [Item]) { self.errors = errors }
}
