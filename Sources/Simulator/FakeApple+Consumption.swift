internal import Canonical
internal import V2Adapter
internal import WireJSON

extension AppleAPIError {
    // Send Consumption Information's own codes (App Store Server API, "Error codes").
    static let invalidCustomerConsented = Self(
        400,
        4_000_035,
        "Invalid request. The customer consented field is invalid or doesn't indicate that the customer consented."
    )
    static let invalidDeliveryStatus = Self(400, 4_000_036, "Invalid request. The delivery status field is invalid.")
    static let invalidSampleContentProvided = Self(
        400,
        4_000_041,
        "Invalid request. The sample content provided field is invalid."
    )
    // The numeric codes of these four are not in our references (docs/simulator.md, "Send Consumption
    // Information"): the fake answers them as GeneralBadRequest (4000000) with a message naming Apple's error, so a
    // client can tell them apart by the message.
    static let invalidRefundPreference = Self(
        400,
        4_000_000,
        "InvalidRefundPreferenceError: the refund preference field is invalid."
    )
    static let consumptionPercentageOutOfRange = Self(
        400,
        4_000_000,
        "ConsumptionPercentageOutOfRangeError: the consumption percentage must be a whole number from 0 to 100000."
    )
    static let undeliveredConsumptionPercentageNonZero = Self(
        400,
        4_000_000,
        "UndeliveredConsumptionPercentageNonZeroError: a purchase that was not delivered has a consumption percentage of 0."
    )
    static let consumptionPercentageAutoRenewableSubscription = Self(
        400,
        4_000_000,
        "ConsumptionPercentageAutoRenewableSubscriptionError: an auto-renewable subscription takes no consumption percentage."
    )
    static let transactionIDNotFound = Self(404, 4_040_010, "Transaction id not found.")
}

/// The body of Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`), checked as
/// Apple checks it, one rule after the other (the first broken one answers): the body is a JSON object with
/// `customerConsented`, `deliveryStatus` and `sampleContentProvided` (else 4000000); `customerConsented` is `true`
/// (4000035); `deliveryStatus` one of Apple's five (4000036); `sampleContentProvided` a Boolean (4000041);
/// `refundPreference` absent or one of Apple's three; `consumptionPercentage` absent or a whole number from 0 to
/// 100000; not above 0 for an undelivered purchase; absent for an auto-renewable subscription. A member sent as `null`
/// is absent when optional (as Apple's Java client sends unset ones), and judged by its rule when required.
struct ConsumptionRequest {
    var customerConsented: Bool
    var deliveryStatus: String
    var sampleContentProvided: Bool
    var consumptionPercentage: Int?
    var refundPreference: String?

    /// `autoRenewable`: whether the transaction is an auto-renewable subscription's.
    init(_ bytes: [UInt8], autoRenewable: Bool) throws(AppleAPIError) {
        guard case .object(let body)? = try? JSONParser.parse(bytes) else { throw .generalBadRequest }
        guard let consented = body["customerConsented"], let delivery = body["deliveryStatus"],
            let sample = body["sampleContentProvided"]
        else { throw .generalBadRequest }
        guard consented.boolValue == true else { throw .invalidCustomerConsented }
        customerConsented = true
        guard let status = delivery.stringValue,
            ConsumptionInformation.DeliveryStatus(rawValue: status) != nil
        else { throw .invalidDeliveryStatus }
        deliveryStatus = status
        guard let provided = sample.boolValue else { throw .invalidSampleContentProvided }
        sampleContentProvided = provided
        func optional(_ name: String) -> JSONValue? { body[name].flatMap { $0.isNull ? nil : $0 } }
        if let preference = optional("refundPreference") {
            guard let text = preference.stringValue, ConsumptionInformation.RefundPreference(rawValue: text) != nil
            else { throw .invalidRefundPreference }
            refundPreference = text
        }
        if let percentage = optional("consumptionPercentage") {
            // A whole number: a fraction is out of Apple's range of integers too.
            guard case .number(let text) = percentage, let value = Int64(text), (0...100_000).contains(value) else {
                throw .consumptionPercentageOutOfRange
            }
            guard value == 0 || deliveryStatus == ConsumptionInformation.DeliveryStatus.delivered.rawValue else {
                throw .undeliveredConsumptionPercentageNonZero
            }
            guard !autoRenewable else { throw .consumptionPercentageAutoRenewableSubscription }
            consumptionPercentage = Int(value)
        }
    }
}

extension FakeApple {
    /// Send Consumption Information: a transaction id that is not one (not digits) is `400 4000006`, one the token's
    /// app does not have `404 4040010`, then the body's rules (``ConsumptionRequest``); accepted, it is recorded in the
    /// state (``SimWorld/consumptionInfo``, `GET /fake/consumption`) and answered `202` with no body, as Apple does.
    func sendConsumption(
        _ transactionID: String,
        bundleID: String,
        body: [UInt8],
        in world: SimWorld
    ) throws
        -> FakeAppleResponse
    {
        guard !transactionID.isEmpty, transactionID.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw AppleAPIError.invalidTransactionID
        }
        guard let s = subscription(transactionID, bundleID: bundleID, in: world),
            let t = s.transactions.first(where: { $0.transactionID == transactionID }) ?? s.latest
        else { throw AppleAPIError.transactionIDNotFound }
        let request = try ConsumptionRequest(
            body,
            autoRenewable: Catalogue.product(t.productID)?.kind == .autoRenewable
        )
        let time = now()
        try store.update { world in
            let count = world.consumptionInfo.filter { $0.transactionID == transactionID }.count + 1
            world.consumptionInfo.append(
                SimConsumptionInfo(
                    transactionID: transactionID,
                    bundleID: bundleID,
                    environment: "Sandbox",
                    customerConsented: request.customerConsented,
                    deliveryStatus: request.deliveryStatus,
                    sampleContentProvided: request.sampleContentProvided,
                    consumptionPercentage: request.consumptionPercentage,
                    refundPreference: request.refundPreference,
                    receivedAt: time,
                    count: count
                )
            )
        }
        return FakeAppleResponse(status: 202, body: [])
    }

    /// The answer to a queued fault (``SimWorld/apiFaults``) of `status`: Apple's error body for it — `429` with
    /// `4290000` and `Retry-After` (``SimWorld/apiFaultRetryAfterSeconds``, 1 by default), `400` with `4000000`,
    /// `404` with `4040010`, any other status with `5000000`.
    static func faultAnswer(_ status: Int, retryAfterSeconds: Int?) -> FakeAppleResponse {
        switch status {
        case 429:
            var limited = apiError(429, 4_290_000, "Rate limit exceeded.")
            limited.headers.append((name: "Retry-After", value: String(max(0, retryAfterSeconds ?? 1))))
            return limited
        case 400: return apiError(400, 4_000_000, AppleAPIError.generalBadRequest.message)
        case 404: return apiError(404, 4_040_010, AppleAPIError.transactionIDNotFound.message)
        default: return apiError(status, 5_000_000, "An unknown error occurred.")
        }
    }

    // MARK: Control endpoints

    /// `GET /fake/consumption[?transaction_id=ID]`: the consumption information accepted (about `ID` only when given),
    /// oldest first, as `{"consumption_info": [{…}], "count": N}`; `DELETE /fake/consumption` forgets it all.
    func consumptionControl(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        switch r.method {
        case "GET":
            let items = try store.consumptionInfo(transactionID: r.value("transaction_id"))
            return FakeAppleResponse(
                status: 200,
                body: JSONValue.object(
                    JSONObject([
                        ("consumption_info", .array(items.map(Self.json))), ("count", .number(String(items.count))),
                    ])
                ).canonicalBytes()
            )
        case "DELETE":
            try store.update { $0.consumptionInfo = [] }
            return FakeAppleResponse(status: 200, body: Array(#"{"count":0}"#.utf8))
        default:
            return Self.controlError(405, "GET or DELETE /fake/consumption")
        }
    }

    /// One accepted request as `GET /fake/consumption` lists it (absent members `null`).
    static func json(_ c: SimConsumptionInfo) -> JSONValue {
        .object(
            JSONObject([
                ("transaction_id", .string(c.transactionID)), ("bundle_id", .string(c.bundleID)),
                ("environment", .string(c.environment)), ("customer_consented", .bool(c.customerConsented)),
                ("delivery_status", .string(c.deliveryStatus)),
                ("sample_content_provided", .bool(c.sampleContentProvided)),
                ("consumption_percentage", c.consumptionPercentage.map { .number(String($0)) } ?? .null),
                ("refund_preference", c.refundPreference.map { .string($0) } ?? .null),
                ("received_at", .number(String(c.receivedAt))), ("count", .number(String(c.count))),
            ])
        )
    }

    /// `POST /fake/api/faults?status=S[&count=N][&retry_after=SECONDS]`: the next `N` (default 1) App Store Server API
    /// requests are answered `S` (400…599) with Apple's error body; `retry_after` sets the `Retry-After` of every
    /// queued `429` (default 1). `GET` shows the queue, `DELETE` empties it. Answers
    /// `{"queued": [S, …], "retry_after": SECONDS}`; a bad parameter `400 {"error": "…"}`.
    func faultsControl(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        switch r.method {
        case "GET": break
        case "DELETE": try store.update { $0.apiFaults = [] }
        case "POST":
            guard let status = r.value("status").flatMap({ Int($0) }), (400...599).contains(status) else {
                return Self.controlError(400, "status must be an HTTP status from 400 to 599")
            }
            let count = r.value("count").map { Int($0) } ?? 1
            guard let count, (1...1000).contains(count) else {
                return Self.controlError(400, "count must be a whole number from 1 to 1000")
            }
            let retryAfter = r.value("retry_after").map { Int($0) }
            if let retryAfter, !(retryAfter.map { (0...86_400).contains($0) } ?? false) {
                return Self.controlError(400, "retry_after must be a whole number of seconds from 0 to 86400")
            }
            try store.update { world in
                world.apiFaults += Array(repeating: status, count: count)
                if let seconds = retryAfter { world.apiFaultRetryAfterSeconds = seconds }
            }
        default:
            return Self.controlError(405, "GET, POST or DELETE /fake/api/faults")
        }
        let world = try store.read()
        return FakeAppleResponse(
            status: 200,
            body: JSONValue.object(
                JSONObject([
                    ("queued", .array(world.apiFaults.map { .number(String($0)) })),
                    ("retry_after", .number(String(world.apiFaultRetryAfterSeconds ?? 1))),
                ])
            ).canonicalBytes()
        )
    }

    static func controlError(_ status: Int, _ message: String) -> FakeAppleResponse {
        FakeAppleResponse(
            status: status,
            body: JSONValue.object(JSONObject([("error", .string(message))])).canonicalBytes()
        )
    }
}
