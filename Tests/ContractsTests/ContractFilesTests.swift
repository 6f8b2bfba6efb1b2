import Contracts
import Crypto
import Foundation
import TestSupport
import Testing

/// The executable carries `schemas/` as it is: ``ContractFiles`` is generated from the folder and held equal to it
/// here; `IAPGW_UPDATE_CONTRACTS=1` rewrites it (review the diff). Each file's digest is pinned below, so a contract
/// does not change without a change to the tests — the pins, and the samples and goldens the change needs.
@Suite struct ContractFilesTests {
    static let schemas = Fixtures.root.deletingLastPathComponent().appending(path: "schemas")
    static let generated = Fixtures.root.deletingLastPathComponent().appending(
        path: "Sources/Contracts/ContractFiles.swift"
    )

    /// The digests (SHA-256) of the files of `schemas/`. A contract that changes changes its digest: update it here,
    /// say what changed in CHANGELOG.md, and bump the event's `schema` when the change breaks a consumer
    /// (docs/contracts.md, "Versions").
    static let pinned: [String: String] = [
        "alert.schema.json": "3ab6c31480599f173d678f798e8fe2e50d3790b500f3d2d372ac6131b5ca7e8c",
        "backfill.schema.json": "588e5acb77a655af7e29daed3c6575b4dd45751f889a689bc3de83ab570151f9",
        "bench.schema.json": "c28819665ece6c321ae3d248aa59ba19747cc128123e868f2eddd0809e4d3070",
        "database-rows.schema.json": "4c687608af505c2b742e49e1783d7399d4f0bc4dd69552de03e6d9740246cfca",
        "envelope.schema.json": "60e39556d2a1de40bc1bd92253a7fdd38c6b792ad52a7085fec5ee6b3b4dbc57",
        "error.schema.json": "85041d69b18d07103e0eca9dfbab391b7c6e3e6a0b902c1cdfd1ed5951e6f488",
        "event.schema.json": "95f6e8f212ced0bf0241612417a8b56b73dc5e0be7380c29f9e9e59484bb5454",
        "migrate-store.schema.json": "f8ecbe9b1fc18f3fc67ea2e2e786e677979694073403328b488f2183d19b9a7b",
        "migrate.schema.json": "8a48f2b667ccfea6cc0941a133fbc20bd1d2e990d6a8a4e249f5b8247070d2c3",
        "openapi.json": "1093b10bba8f43e97768b0d111171d63a953d706b9282f02462b326637c6ba1f",
        "receipts-prefetch.schema.json": "4d9cb3316a2f396e791dd0307ed39b53e1a1fc1f5c773687a76d5837d3de3354",
        "refund-answer.schema.json": "693605b5f0e3eed090a3f14899d17faf06925f78c9e7589f25cd7b40b09f54b8",
        "refund-request.schema.json": "ca058bdab023c6238f3f1fcb6babdacc4165d74cbd9d0e1df1c7534dd064645a",
        "state.schema.json": "90eb278dde746f5df89d06cd6a343aadfff51cb50bf8f0bb59e58d3984798dbb",
    ]

    static func files() throws -> [(name: String, text: String)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: schemas.path())
            .filter { $0.hasSuffix(".json") }
            .sorted()
        return try names.map { ($0, try String(contentsOf: schemas.appending(path: $0), encoding: .utf8)) }
    }

    /// The Swift source of ``ContractFiles`` for `files`.
    static func source(_ files: [(name: String, text: String)]) throws -> String {
        var out = """
            // swift-format-ignore-file
            // Generated from schemas/ by ContractFilesTests (`IAPGW_UPDATE_CONTRACTS=1 swift test --filter ContractFilesTests`):
            // do not edit; edit the files in schemas/ and run that.

            /// Every file of `schemas/`, by name, in name order (docs/contracts.md).
            public enum ContractFiles {
                /// The text of the file named `file`, as it is in `schemas/`.
                public static func text(of file: String) -> String? { files.first { $0.name == file }?.text }

                public static let files: [(name: String, text: String)] = [

            """
        for file in files {
            let text = file.text.hasSuffix("\n") ? String(file.text.dropLast()) : file.text
            guard !text.contains("\"\"\"##"), !text.contains("\\##"), !text.contains("\r") else {
                throw ContractError(description: "\(file.name) holds text the generated raw string cannot")
            }
            let body = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.isEmpty ? "" : "            " + $0 }
                .joined(separator: "\n")
            out +=
                "        (\n            \"\(file.name)\",\n            ##\"\"\"\n\(body)\n            \"\"\"##\n        ),\n"
        }
        out += "    ]\n}\n"
        return out
    }

    struct ContractError: Error, CustomStringConvertible { var description: String }

    @Test func theExecutableCarriesTheSchemasFolderAsItIs() throws {
        let files = try Self.files()
        let expected = try Self.source(files)
        let current = try String(contentsOf: Self.generated, encoding: .utf8)
        if ProcessInfo.processInfo.environment["IAPGW_UPDATE_CONTRACTS"] == "1", current != expected {
            try expected.write(to: Self.generated, atomically: true, encoding: .utf8)
            return
        }
        #expect(current == expected, "Sources/Contracts/ContractFiles.swift is stale: IAPGW_UPDATE_CONTRACTS=1")
        #expect(ContractFiles.files.map(\.name) == files.map(\.name))
        for (embedded, file) in zip(ContractFiles.files, files) {
            #expect(embedded.text + "\n" == file.text || embedded.text == file.text, "\(file.name)")
        }
    }

    @Test func everyFileIsAContractAndEveryContractAFile() throws {
        let names = try Self.files().map(\.name)
        #expect(Set(names) == Set(Contracts.documents.map(\.file)))
        #expect(Set(Contracts.documents.map(\.name)).count == Contracts.documents.count)
    }

    @Test func everyFileIsPinned() throws {
        let digests = Dictionary(
            uniqueKeysWithValues: try Self.files().map { ($0.name, SHA256.hex(Array($0.text.utf8))) }
        )
        let changed = digests.filter { Self.pinned[$0.key] != $0.value }.sorted { $0.key < $1.key }
        #expect(
            changed.isEmpty && Set(Self.pinned.keys) == Set(digests.keys),
            """
            a contract changed: pin it in ContractFilesTests.pinned, note it in CHANGELOG.md, bump the event's \
            `schema` if it breaks a consumer (docs/contracts.md):
            \(changed.map { "        \"\($0.key)\": \"\($0.value)\"," }.joined(separator: "\n"))
            """
        )
    }
}
