internal import HTTPServer

extension ServerResponse {
    /// An error answer, `{"error":{"code":…,"message":…}}`: its status from ``Disposition``, the one mapping of codes
    /// to statuses.
    static func answer(_ error: GatewayError) -> ServerResponse {
        .json(Disposition(error).status, NotificationIngest.errorBody(error))
    }
}
