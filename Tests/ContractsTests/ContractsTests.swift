import Canonical
import Contracts
import Foundation
import RefundRequests
import Store
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// The contracts of `schemas/` against the code that writes what they describe: every key the gateway writes is
/// named, every code and state it answers is listed, every admin route is in the OpenAPI document, and what
/// `iap-gateway schema` prints and `GET /admin/openapi.json` serves is self-contained. Whether the gateway's output
/// validates is checked with an independent validator on the samples the tests leave (`scripts/check-contracts`).
@Suite struct ContractsTests {
    static let sources = Fixtures.root.deletingLastPathComponent().appending(path: "Sources")

    static func schema(_ file: String) throws -> JSONObject {
        let text = try #require(ContractFiles.text(of: file))
        return try #require(try JSONParser.parse(Array(text.utf8)).objectValue)
    }

    /// The value at a JSON pointer (`/$defs/kind`), nil when there is none.
    static func resolve(_ pointer: String, in root: JSONValue) -> JSONValue? {
        var value: JSONValue? = root
        for raw in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch value {
            case .object(let o)?: value = o[token]
            case .array(let a)?: value = Int(token).flatMap { a.indices.contains($0) ? a[$0] : nil }
            default: return nil
            }
        }
        return value
    }

    static func references(in value: JSONValue) -> [String] {
        switch value {
        case .object(let o):
            o.members.flatMap { m in
                if m.key == "$ref", case .string(let s) = m.value { return [s] }
                return references(in: m.value)
            }
        case .array(let a): a.flatMap(references(in:))
        default: []
        }
    }

    static func strings(_ value: JSONValue?) -> Set<String> {
        Set(value?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    @Test(arguments: Contracts.documents.map(\.name))
    func everyContractIsPrintedSelfContained(_ name: String) throws {
        let document = try #require(Contracts.document(named: name))
        let bundled = try JSONParser.parse(try Contracts.bundled(document))
        let references = Self.references(in: bundled)
        for reference in references {
            #expect(reference.hasPrefix("#"), "\(name): \(reference) points outside the document")
            #expect(Self.resolve(String(reference.dropFirst()), in: bundled) != nil, "\(name): \(reference)")
        }
        if name == "openapi" {
            #expect(try JSONParser.parse(Contracts.openAPI) == bundled)
            #expect(bundled.objectValue?["openapi"] == .string("3.1.0"))
            #expect(bundled.objectValue?["info"]?.objectValue?["version"] == .string(GatewayVersion.string))
        } else {
            #expect(bundled.objectValue?["$schema"] == .string("https://json-schema.org/draft/2020-12/schema"))
        }
    }

    /// A file embedded twice, or under another file's name, would make two types of one: each is embedded once.
    @Test func aFileReferredToTwiceIsEmbeddedOnce() throws {
        let envelope = try JSONParser.parse(try Contracts.bundled(try #require(Contracts.document(named: "envelope"))))
        let defs = try #require(envelope.objectValue?["$defs"]?.objectValue)
        #expect(defs.keys == ["CanonicalEvent", "SubscriptionState"])
        // The state's reference to the event's kinds lands in the one embedded event.
        let state = try #require(defs["SubscriptionState"])
        #expect(Self.references(in: state).contains("#/$defs/CanonicalEvent/$defs/kind"))
        #expect(throws: Contracts.Failure.self) {
            try Contracts.bundled(Contracts.Document(name: "x", file: "missing.json", component: "X", summary: ""))
        }
    }

    // MARK: What the schemas list, against the code

    /// Every code an HTTP answer of the gateway can carry: the gateway's, a refused cutover's or switch's, and the HTTP
    /// server's own (read from its sources: the server answers them before any handler runs).
    @Test func theErrorSchemaListsEveryCodeTheGatewayAnswers() throws {
        let listed = Self.strings(Self.resolve("/$defs/code/enum", in: .object(try Self.schema("error.schema.json"))))
        var codes = Set(GatewayError.Code.allCases.map(\.rawValue))
        codes.formUnion(CutoverError.Code.allCases.map(\.rawValue))
        codes.formUnion(MigrationError.Code.allCases.map(\.rawValue))
        let server = try FileManager.default.contentsOfDirectory(
            atPath: Self.sources.appending(path: "HTTPServer").path()
        )
        .filter { $0.hasSuffix(".swift") }
        .map { try String(contentsOf: Self.sources.appending(path: "HTTPServer/\($0)"), encoding: .utf8) }
        .joined()
        let serverCodes = server.matches(of: /(?:code: |\(\d{3}, )"([a-z_]+)"/).map { String($0.output.1) }
        #expect(Set(serverCodes).isSuperset(of: ["body_too_large", "server_busy", "address_busy", "bad_request"]))
        codes.formUnion(serverCodes)
        #expect(
            listed == codes,
            "missing: \(codes.subtracting(listed).sorted()), stale: \(listed.subtracting(codes).sorted())"
        )
    }

    /// An event with every value set: each key it writes is in the schema, and the keys of an event with none set are
    /// exactly the schema's `required` (the keys always present).
    @Test func theEventSchemaNamesEveryKeyTheEventWrites() throws {
        let schema = try Self.schema("event.schema.json")
        let properties = Set(try #require(schema["properties"]?.objectValue).keys)
        let required = Self.strings(schema["required"])
        var full = CanonicalEvent(
            id: "e",
            source: .v2,
            kind: .seatsChanged,
            rawType: "T",
            eventDate: 1,
            eventDateSource: .signedDate,
            verified: true
        )
        full.appTransactionID = "a"
        full.consumptionRequestReason = "legal"
        full.externalPurchaseID = "x"
        full.externalPurchaseTokenType = "SERVICES"
        full.externalPurchaseTokenCreationDate = 1
        full.externalPurchaseTokenExpirationDate = 2
        full.revokedSeats = 1
        full.invitationManagement = "apple"
        full.seatPriceTiers = [SeatPriceTier(priceMilli: 1, quantity: 2)]
        full.amountMilli = 2
        full.additionalTransactionReason = "seat_addition"
        full.renewalQuantity = 3
        full.renewalSeatPriceTiers = [SeatPriceTier(priceMilli: 1, quantity: 3)]
        full.unclaimedSeatIDs = ["s"]
        full.groupSeats = 2
        let written = try #require(try JSONParser.parse(CanonicalJSON.encode(full)).objectValue)
        #expect(Set(written.keys).subtracting(properties).isEmpty, "\(Set(written.keys).subtracting(properties))")
        #expect(Set(written.keys) == properties, "keys the schema names that no event writes")
        let bare = CanonicalEvent(
            id: "e",
            source: .v2,
            kind: .test,
            rawType: "TEST",
            eventDate: 1,
            eventDateSource: .signedDate,
            verified: true
        )
        #expect(Set(try #require(try JSONParser.parse(CanonicalJSON.encode(bare)).objectValue).keys) == required)
        #expect(
            Self.strings(Self.resolve("/$defs/kind/enum", in: .object(schema))) == Set(EventKind.all.map(\.rawValue))
        )
        #expect(
            Self.strings(Self.resolve("/$defs/entitlement/properties/state/enum", in: .object(schema)))
                == ["active", "grace_period", "billing_retry", "expired", "revoked"]
        )
    }

    /// Every reason `EventReason` defines (read from its source: it has no list of its own) is in the schema's.
    @Test func theEventSchemaListsEveryReason() throws {
        let vocabulary = try String(
            contentsOf: Self.sources.appending(path: "Canonical/Vocabulary.swift"),
            encoding: .utf8
        )
        let start = try #require(vocabulary.range(of: "public struct EventReason"))
        let end = try #require(vocabulary.range(of: "public struct EventSource"))
        let reasons = vocabulary[start.upperBound..<end.lowerBound].matches(of: /Self\(rawValue: "([a-z_]+)"\)/)
            .map { String($0.output.1) }
        let listed = Self.strings(Self.resolve("/$defs/reason/enum", in: .object(try Self.schema("event.schema.json"))))
        #expect(reasons.count > 20)
        #expect(
            listed == Set(reasons),
            "missing: \(Set(reasons).subtracting(listed)), stale: \(listed.subtracting(reasons))"
        )
    }

    @Test func theStateSchemaNamesEveryKeyTheStateWrites() throws {
        let schema = try Self.schema("state.schema.json")
        var event = CanonicalEvent(
            id: "e",
            source: .v2,
            kind: .purchase,
            rawType: "SUBSCRIBED",
            eventDate: 1,
            eventDateSource: .signedDate,
            verified: true
        )
        event.originalTransactionID = "1"
        let plain = SubscriptionState(path: .v2, event: event)
        event.groupSeats = 3
        event.renewalQuantity = 2
        let group = SubscriptionState(path: .v2, event: event)
        let plainKeys = Set(try #require(try JSONParser.parse(CanonicalJSON.encode(plain)).objectValue).keys)
        let groupKeys = Set(try #require(try JSONParser.parse(CanonicalJSON.encode(group)).objectValue).keys)
        #expect(plainKeys == Self.strings(schema["required"]))
        #expect(groupKeys == Set(try #require(schema["properties"]?.objectValue).keys))
    }

    /// The OpenAPI document's lists of states, lanes and refund-request states are the store's.
    @Test func theOpenAPIDocumentListsTheStoresStates() throws {
        let openAPI = JSONValue.object(try Self.schema("openapi.json"))
        #expect(
            Self.strings(Self.resolve("/components/schemas/RefundRequestState/enum", in: openAPI))
                == Set(ConsumptionState.allCases.map(\.rawValue))
        )
        let deliveries = try #require(
            Self.resolve("/paths/~1admin~1deliveries/get/parameters", in: openAPI)?.arrayValue
        )
        let status = try #require(deliveries.first { $0.objectValue?["name"] == .string("status") })
        #expect(Self.strings(Self.resolve("/schema/enum", in: status)) == Set(DeliveryState.allCases.map(\.rawValue)))
        #expect(
            Self.strings(Self.resolve("/components/schemas/QuarantinedRow/properties/lane/enum", in: openAPI))
                == Set(QuarantineRecord.Lane.allCases.map(\.rawValue))
        )
    }

    /// Every route the admin API and the public listener answer (their route tables) is a path of the document, and
    /// every path of the document is a route.
    @Test func theOpenAPIDocumentHasEveryRouteAndNoOther() throws {
        let openAPI = try Self.schema("openapi.json")
        let documented = Set(
            try #require(openAPI["paths"]?.objectValue).members.flatMap { path, item in
                (item.objectValue?.keys ?? []).map { "\($0.uppercased()) \(path)" }
            }
        )
        let routes = Set(
            AdminAPI.table.routes.map { "\($0.method) \($0.pattern)" }
                + PublicRoutes.table.routes.map { "\($0.method) \($0.pattern)" }
        )
        #expect(routes.count > 15)
        #expect(
            documented == routes,
            "undocumented: \(routes.subtracting(documented)), no route: \(documented.subtracting(routes))"
        )
    }

    // MARK: What the gateway reads

    static func examples(_ contract: String, _ verdict: String) throws -> [(String, [UInt8])] {
        let folder = Fixtures.url("contracts/\(contract)/\(verdict)")
        return try FileManager.default.contentsOfDirectory(atPath: folder.path()).filter { $0.hasSuffix(".json") }
            .sorted()
            .map { ($0, Array(try Data(contentsOf: folder.appending(path: $0)))) }
    }

    /// Whether the gateway takes `bytes` as a team's answer: final as a refusal of consent, or read whole with a
    /// percentage in Apple's range. The rules that depend on the purchase's product (no percentage for a
    /// subscription, …) are the schema's prose, not its shape: they are left out by judging the answer as a delivered
    /// consumable's without a preference, where only the range can fail.
    static func gatewayTakes(_ bytes: [UInt8]) -> Bool {
        if ConsumptionAnswer.refusesConsent(bytes) { return true }
        guard var info = try? ConsumptionAnswer.read(bytes) else { return false }
        (info.deliveryStatus, info.refundPreference) = (.delivered, nil)
        return (try? ConsumptionAnswer.check(info, for: .consumable)) != nil
    }

    /// The refund answer's schema says what the gateway reads: its valid examples are taken, its invalid ones refused
    /// (`scripts/check-contracts` holds the schema to the same examples).
    @Test func theRefundAnswerSchemaIsWhatTheGatewayReads() throws {
        let valid = try Self.examples("refund-answer", "valid")
        let invalid = try Self.examples("refund-answer", "invalid")
        #expect(valid.count >= 5 && invalid.count >= 8)
        for (name, bytes) in valid { #expect(Self.gatewayTakes(bytes), "valid/\(name)") }
        for (name, bytes) in invalid { #expect(!Self.gatewayTakes(bytes), "invalid/\(name)") }
        let members = Set(
            try #require(
                Self.resolve("/$defs/answer/properties", in: .object(try Self.schema("refund-answer.schema.json")))?
                    .objectValue
            ).keys
        )
        #expect(members == ConsumptionAnswer.members)
    }
}
