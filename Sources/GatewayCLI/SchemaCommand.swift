internal import Contracts
internal import Gateway
internal import ServiceKit

/// `iap-gateway schema [NAME]`: one of the gateway's contracts, self-contained (``Contracts/bundled(_:)``), so a team
/// generates types or validates its tests without the repository (docs/contracts.md).
enum SchemaCommand: Command {
    static let name = "schema"
    static let usage = """
          iap-gateway schema [NAME]
              Prints one of the gateway's contracts, self-contained: a JSON Schema (2020-12) of what it sends or
              writes, or (openapi) the OpenAPI 3.1 document of its listeners, also served at GET /admin/openapi.json.
              Names: event, state, envelope, alert, refund-request, refund-answer, database-rows, migrate, backfill,
              receipts-prefetch, migrate-store, bench, error, openapi. Without NAME, lists them.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: [])
        guard let wanted = try a.positionals(atMost: 1, for: name).first else {
            let width = Contracts.documents.map(\.name.count).max() ?? 0
            let lines = Contracts.documents.map { d in
                d.name + String(repeating: " ", count: width - d.name.count + 2) + d.summary + "\n"
            }
            FileHandleOutput.stdout(lines.joined())
            return 0
        }
        guard let document = Contracts.document(named: wanted) else {
            let names = Contracts.documents.map(\.name).joined(separator: ", ")
            throw CommandError.usage("schema: no contract named \(wanted) (\(names))")
        }
        FileHandleOutput.stdout(String(decoding: try Contracts.bundled(document), as: UTF8.self))
        return 0
    }
}
