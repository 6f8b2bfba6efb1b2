internal import Gateway
internal import Store

/// `iap-gateway quarantine list|replay`: the bodies the gateway refused but kept, and re-running them after a fix.
enum QuarantineCommand: Command {
    static let name = "quarantine"
    static let usage = """
          iap-gateway quarantine --config FILE list|replay [--lane untrusted|genuine] [--id ROW]
              Show quarantined bodies, or re-run them after a config fix (each judged as of its arrival; a row that
              still fails stays, with its outcome).
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "lane", "id"])
        guard let action = try a.positionals(atMost: 1, for: name).first, action == "list" || action == "replay" else {
            throw CommandError.usage("quarantine needs list or replay")
        }
        try a.only(action == "list" ? ["config", "lane"] : ["config", "lane", "id"], for: "quarantine \(action)")
        var selection = Operations.QuarantineSelection(limit: 10_000)
        if let lane = a.value("lane") {
            guard let l = QuarantineRecord.Lane(rawValue: lane) else {
                throw CommandError.usage("--lane must be untrusted or genuine")
            }
            selection.lane = l
        }
        if let id = a.value("id") {
            guard let n = Int64(id) else { throw CommandError.usage("--id must be a quarantine row id") }
            selection.id = n
        }
        let config = try a.config(for: name)
        let bytes: [UInt8]
        if action == "list" {
            bytes = try withStore(config) { store in
                try store.operations.quarantineList(lane: selection.lane, limit: 10_000).canonicalBytes()
            }
        } else {
            bytes = try await withService(config) { service in
                try service.operations.quarantineReplay(
                    ingest: service.ingest,
                    secrets: service.v1SecretsForReplay,
                    selection: selection
                )
                .canonicalBytes()
            }
        }
        print(String(decoding: bytes, as: UTF8.self))
        return 0
    }
}
