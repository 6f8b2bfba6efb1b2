package import Canonical
package import V2Adapter
package import WireJSON

/// Reads an answer to a refund request — the team's service's JSON, or an app's `consumption.default` — into Send
/// Consumption Information's body, in Apple's own member names. Strict: a member this build does not know, a value
/// of the wrong type or outside Apple's lists is refused with a stable code (a misspelt `refundPreference` must not
/// quietly send no preference). Apple's rules depend on the purchase's product, so they are checked apart
/// (``check(_:for:)``) — except consent, which is the responder's to act on: an answer readably without it is final
/// whatever else it holds (``refusesConsent(_:)``; docs/operations.md, "Refund requests").
package enum ConsumptionAnswer {
    /// Why an answer is refused: `invalid_answer` with the member, or one of Apple's rules (``problem``).
    package struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// `invalid_answer`, or the broken rule's code (`percentage_out_of_range`, …).
        package var code: String
        package var detail: String
        package var description: String { "\(code): \(detail)" }
    }

    package static let members: Set<String> = [
        "customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference",
    ]

    /// Whether the answer in `bytes` is a JSON object whose `customerConsented` is `false`, whatever else it holds.
    package static func refusesConsent(_ bytes: [UInt8]) -> Bool {
        guard let object = (try? JSONParser.parse(bytes))?.objectValue else { return false }
        return refusesConsent(object)
    }

    /// Whether the answer says the customer did not consent (`customerConsented: false`): such an answer is final —
    /// nothing is sent, and neither an ask nor the default replaces it — even where its other members are unusable.
    package static func refusesConsent(_ o: JSONObject) -> Bool { o["customerConsented"]?.boolValue == false }

    /// The answer in `bytes` (a JSON object).
    package static func read(_ bytes: [UInt8]) throws(Refusal) -> ConsumptionInformation {
        guard let value = try? JSONParser.parse(bytes), let object = value.objectValue else {
            throw Refusal(code: "invalid_answer", detail: "the answer is not a JSON object")
        }
        return try read(object)
    }

    /// The answer in `o`: its members and their values, before Apple's rules for the product (``check(_:for:)``).
    package static func read(_ o: JSONObject) throws(Refusal) -> ConsumptionInformation {
        for (key, _) in o where !members.contains(key) {
            throw Refusal(code: "invalid_answer", detail: "unknown member \(key.prefix(64))")
        }
        func value(_ key: String) -> JSONValue? { o[key] }
        func bool(_ key: String) throws(Refusal) -> Bool {
            guard let b = value(key)?.boolValue else {
                throw Refusal(code: "invalid_answer", detail: "\(key) must be true or false")
            }
            return b
        }
        let consented = try bool("customerConsented")
        guard let statusText = value("deliveryStatus")?.stringValue,
            let status = ConsumptionInformation.DeliveryStatus(rawValue: statusText)
        else {
            let allowed = ConsumptionInformation.DeliveryStatus.allCases.map(\.rawValue).joined(separator: ", ")
            throw Refusal(code: "invalid_answer", detail: "deliveryStatus must be one of \(allowed)")
        }
        let sample = try bool("sampleContentProvided")
        var percentage: Int?
        if let v = value("consumptionPercentage"), !v.isNull {
            guard case .number(let text) = v, let p = Int(text) else {
                throw Refusal(code: "invalid_answer", detail: "consumptionPercentage must be an integer (milliunits)")
            }
            percentage = p
        }
        var preference: ConsumptionInformation.RefundPreference?
        if let v = value("refundPreference"), !v.isNull {
            guard let text = v.stringValue, let p = ConsumptionInformation.RefundPreference(rawValue: text) else {
                let allowed = ConsumptionInformation.RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
                throw Refusal(code: "invalid_answer", detail: "refundPreference must be one of \(allowed)")
            }
            preference = p
        }
        return ConsumptionInformation(
            customerConsented: consented,
            deliveryStatus: status,
            sampleContentProvided: sample,
            consumptionPercentage: percentage,
            refundPreference: preference
        )
    }

    /// Apple's rules for a purchase of `productType` (``ConsumptionInformation/validated(for:)``), consent apart:
    /// that is the responder's to act on (nothing is sent without it).
    package static func check(_ info: ConsumptionInformation, for productType: ProductType?) throws(Refusal) {
        var consenting = info
        consenting.customerConsented = true
        do { _ = try consenting.validated(for: productType) } catch {
            throw Refusal(code: error.rawValue, detail: "Apple would refuse this answer for this product")
        }
    }
}
