internal import Crypto
internal import FoundationEssentials

/// Samples of what the gateway sends and writes, for its contracts (docs/contracts.md). When the environment variable
/// `IAPGW_CONTRACT_SAMPLES` names a folder, the tests leave there each JSON the gateway sent (a webhook delivery, an
/// alert, a refund-request ask), wrote (a database downstream's rows) or printed (`migrate`, `backfill`,
/// `migrate-store`), one file per distinct body in a folder per contract; `scripts/check-contracts --samples FOLDER`
/// then validates every one of them against `schemas/` with an independent validator (PyPI's `jsonschema`), and fails
/// when a contract got no sample at all. Without the variable nothing is written.
public enum ContractSamples {
    /// The folder, when samples are wanted.
    public static let folder: String? = {
        guard let value = ProcessInfo.processInfo.environment["IAPGW_CONTRACT_SAMPLES"], !value.isEmpty else {
            return nil
        }
        return value
    }()

    /// Keeps `bytes` as a sample of `contract` (a folder name the checker knows: `envelope`, `alert`,
    /// `refund-request`, `database-rows/events`, `migrate`, …). Identical bodies are kept once.
    public static func record(_ contract: String, _ bytes: [UInt8]) {
        guard let folder else { return }
        let directory = URL(filePath: folder).appending(path: contract)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appending(path: String(SHA256.hex(bytes).prefix(32)) + ".json")
        try? Data(bytes).write(to: file, options: .atomic)
    }

    /// Keeps each line of `output` (a command's standard output: one JSON object a line) as a sample of `contract`.
    public static func recordLines(_ contract: String, _ output: [UInt8]) {
        guard folder != nil else { return }
        for line in output.split(separator: 0x0A) where line.first == UInt8(ascii: "{") {
            record(contract, Array(line))
        }
    }

    /// A request the gateway sent, as a receiver saw it: kept when it is one of the gateway's signed JSON bodies
    /// (Standard Webhooks headers) whose `type` a contract covers. Pass-through bodies (Apple's own formats) and
    /// anything a test sent itself are left alone.
    public static func recordSent(headers: [(name: String, value: String)], body: [UInt8]) {
        guard folder != nil,
            headers.contains(where: { $0.name.lowercased() == "webhook-id" }),
            headers.contains(where: { $0.name.lowercased() == "webhook-timestamp" }),
            let contract = contract(ofSent: body)
        else { return }
        record(contract, body)
    }

    /// The contract a signed body's `type` names, read from its first bytes only (`{"type":"…"` or after other keys).
    static func contract(ofSent body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        for (type, contract) in types where text.contains("\"type\":\"\(type)\"") {
            return contract
        }
        return nil
    }

    static let types: [(String, String)] = [
        ("subscription.event", "envelope"), ("consumption.request", "refund-request"),
        ("delivery.dead_lettered", "alert"), ("deliveries.unconfigured", "alert"),
        ("consumption.dead_lettered", "alert"),
    ]
}
