internal import WireJSON

/// The gateway's machine-readable contracts (docs/contracts.md): a JSON Schema (2020-12) for each JSON it sends or
/// writes, and the OpenAPI 3.1 document of its two listeners. The files in `schemas/` are the source; the executable
/// carries them (``ContractFiles``, generated from them and held equal by a test), so `iap-gateway schema NAME` and
/// `GET /admin/openapi.json` need no file beside the binary.
///
/// The files refer to each other by file name (`"$ref": "event.schema.json#/$defs/kind"`); what is printed or served
/// is self-contained (``bundled(_:)``): each file referred to is embedded once, under its ``Document/component`` name
/// (in `$defs`, or in the OpenAPI document's `components.schemas`), and every reference points into the document.
public enum Contracts {
    /// One contract: its name on the command line, its file in `schemas/`, and the name it is embedded under.
    public struct Document: Sendable, Hashable {
        /// `iap-gateway schema NAME`.
        public var name: String
        public var file: String
        /// Its key in another document's `$defs` or `components.schemas`: a name types can be generated from.
        public var component: String
        /// One line for `iap-gateway schema` without a name.
        public var summary: String

        public init(name: String, file: String, component: String, summary: String) {
            (self.name, self.file, self.component, self.summary) = (name, file, component, summary)
        }
    }

    /// Every contract, in the order `iap-gateway schema` lists them.
    public static let documents: [Document] = [
        Document(name: "event", file: "event.schema.json", component: "CanonicalEvent", summary: "the canonical event"),
        Document(
            name: "state",
            file: "state.schema.json",
            component: "SubscriptionState",
            summary: "a subscription's state (the envelope's `state`)"
        ),
        Document(
            name: "envelope",
            file: "envelope.schema.json",
            component: "SubscriptionEventEnvelope",
            summary: "a webhook downstream's delivery: subscription.event"
        ),
        Document(
            name: "alert",
            file: "alert.schema.json",
            component: "Alert",
            summary:
                "alerts.webhook's bodies: delivery.dead_lettered, deliveries.unconfigured, consumption.dead_lettered"
        ),
        Document(
            name: "refund-request",
            file: "refund-request.schema.json",
            component: "RefundRequest",
            summary: "the ask to the team's service: consumption.request"
        ),
        Document(
            name: "refund-answer",
            file: "refund-answer.schema.json",
            component: "RefundAnswer",
            summary: "the team's answer to a refund request"
        ),
        Document(
            name: "database-rows",
            file: "database-rows.schema.json",
            component: "DatabaseRow",
            summary: "a database downstream's rows: events, subscriptions, schema_version"
        ),
        Document(
            name: "migrate",
            file: "migrate.schema.json",
            component: "MigrationStep",
            summary: "a line of `migrate`"
        ),
        Document(
            name: "backfill",
            file: "backfill.schema.json",
            component: "BackfillListing",
            summary: "a line of `backfill`"
        ),
        Document(
            name: "receipts-prefetch",
            file: "receipts-prefetch.schema.json",
            component: "ReceiptsPrefetchProgress",
            summary: "a line of `receipts prefetch`"
        ),
        Document(
            name: "migrate-store",
            file: "migrate-store.schema.json",
            component: "StoreMigrationSummary",
            summary: "the line of `migrate-store`"
        ),
        Document(name: "bench", file: "bench.schema.json", component: "BenchResult", summary: "the line of `bench`"),
        Document(
            name: "error",
            file: "error.schema.json",
            component: "Error",
            summary: "every HTTP error answer: {\"error\": {\"code\", \"message\"}}"
        ),
        Document(
            name: "openapi",
            file: "openapi.json",
            component: "",
            summary: "OpenAPI 3.1: the public listener and the admin API (also GET /admin/openapi.json)"
        ),
    ]

    /// Why a contract cannot be given: an unknown name, or a file that does not bundle (a test holds every file
    /// bundling).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The document named `name` (`event`, …, `openapi`).
    public static func document(named name: String) -> Document? { documents.first { $0.name == name } }

    /// The document, self-contained, as pretty-printed JSON text with a final newline.
    public static func bundled(_ document: Document) throws(Failure) -> [UInt8] {
        var bundler = Bundler(openAPI: document.file == "openapi.json")
        let root = try bundler.load(document.file)
        var value = try bundler.rewrite(root, file: document.file, prefix: "")
        value = bundler.attach(to: value)
        return value.text(pretty: true) + [0x0A]
    }

    /// `GET /admin/openapi.json`: the OpenAPI document, self-contained (computed once).
    public static let openAPI: [UInt8] = {
        // Every file bundles (ContractsTests): a failure here is a build that skipped its tests.
        (try? bundled(document(named: "openapi")!)) ?? Array(#"{"openapi":"3.1.0"}"#.utf8)
    }()

    /// Embeds the files a document refers to and points its references into it.
    struct Bundler {
        /// Components go in `components.schemas` (OpenAPI) rather than `$defs` (a JSON Schema).
        let openAPI: Bool
        /// The files embedded so far, in order of first reference: their component name and rewritten value.
        var embedded: [(file: String, component: String, value: JSONValue)] = []
        var pending: Set<String> = []

        init(openAPI: Bool) { self.openAPI = openAPI }

        var base: String { openAPI ? "/components/schemas/" : "/$defs/" }

        func load(_ file: String) throws(Failure) -> JSONValue {
            guard let text = ContractFiles.text(of: file) else {
                throw Failure(description: "no contract file \(file)")
            }
            do { return try JSONParser.parse(Array(text.utf8)) } catch {
                throw Failure(description: "\(file) is not JSON: \(error)")
            }
        }

        /// `value` (part of `file`, embedded at `prefix`, "" for the root) with every `$ref` pointing into the bundle.
        mutating func rewrite(_ value: JSONValue, file: String, prefix: String) throws(Failure) -> JSONValue {
            switch value {
            case .array(let items):
                var out: [JSONValue] = []
                for item in items { out.append(try rewrite(item, file: file, prefix: prefix)) }
                return .array(out)
            case .object(let o):
                var members: [(key: String, value: JSONValue)] = []
                for (key, member) in o {
                    if key == "$ref", case .string(let ref) = member {
                        members.append((key, .string(try reference(ref, from: file, prefix: prefix))))
                    } else {
                        members.append((key, try rewrite(member, file: file, prefix: prefix)))
                    }
                }
                return .object(JSONObject(members))
            default:
                return value
            }
        }

        /// A reference as it reads in the bundle: local ones under the file's own place, others to the file embedded.
        mutating func reference(_ ref: String, from file: String, prefix: String) throws(Failure) -> String {
            let hash = ref.firstIndex(of: "#")
            let target = String(hash.map { ref[..<$0] } ?? ref[...])
            let fragment = hash.map { String(ref[ref.index(after: $0)...]) } ?? ""
            if target.isEmpty { return "#" + prefix + fragment }
            guard let document = Contracts.documents.first(where: { $0.file == target }), !document.component.isEmpty
            else { throw Failure(description: "\(file) refers to \(target), which is no schema of ours") }
            let place = base + document.component
            if !embedded.contains(where: { $0.file == target }) && !pending.contains(target) {
                pending.insert(target)
                var schema = try load(target)
                if case .object(let o) = schema {
                    // A subschema is no resource of its own: the dialect is the bundle's.
                    schema = .object(JSONObject(o.members.filter { $0.key != "$schema" && $0.key != "$id" }))
                }
                let value = try rewrite(schema, file: target, prefix: place)
                embedded.append((target, document.component, value))
                pending.remove(target)
            }
            return "#" + place + fragment
        }

        /// `root` with the embedded files added: at the end of its `$defs`, or of `components.schemas`.
        func attach(to root: JSONValue) -> JSONValue {
            guard !embedded.isEmpty, case .object(let o) = root else { return root }
            let added = embedded.map { (key: $0.component, value: $0.value) }
            func appending(_ members: [(key: String, value: JSONValue)], into container: JSONValue?) -> JSONValue {
                .object(JSONObject((container?.objectValue?.members ?? []) + members))
            }
            var members = o.members
            if openAPI {
                let components = o["components"]
                let schemas = appending(added, into: components?.objectValue?["schemas"])
                var inner = components?.objectValue?.members.filter { $0.key != "schemas" } ?? []
                inner.insert(("schemas", schemas), at: 0)
                if let i = members.firstIndex(where: { $0.key == "components" }) {
                    members[i].value = .object(JSONObject(inner))
                } else {
                    members.append(("components", .object(JSONObject(inner))))
                }
            } else if let i = members.firstIndex(where: { $0.key == "$defs" }) {
                members[i].value = appending(added, into: members[i].value)
            } else {
                members.append(("$defs", .object(JSONObject(added))))
            }
            return .object(JSONObject(members))
        }
    }
}
