internal import HTTPServer

extension ServerResponse {
    /// An error answer, `{"error":{"code":…,"message":…}}`: its status from ``Disposition``, the one mapping of codes
    /// to statuses.
    static func answer(_ error: GatewayError) -> ServerResponse {
        .json(Disposition(error).status, NotificationIngest.errorBody(error))
    }

    /// 405 `method_not_allowed` with `Allow` naming the method the path takes: RFC 9110 §15.5.6 makes it part of every
    /// 405 (docs/contracts.md: the OpenAPI document names one method per path).
    static func methodNotAllowed(allow: String) -> ServerResponse {
        var response = answer(GatewayError(.methodNotAllowed, "method not allowed"))
        response.headers.append(("Allow", allow))
        return response
    }
}
