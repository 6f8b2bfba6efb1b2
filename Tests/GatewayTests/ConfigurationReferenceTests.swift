import FoundationEssentials
import Gateway
import Testing

/// docs/configuration.md documents every key the parser accepts, and nothing else: its key tables are compared with
/// ``GatewayConfig/knownKeys``, which is built from the very sets the parser hands to `rejectUnknown(allowed:)`.
@Suite struct ConfigurationReferenceTests {
    /// `docs/configuration.md`, found through this file's path (like `Fixtures.root`), so the working directory does
    /// not matter.
    static let referenceURL = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "docs").appending(path: "configuration.md")

    /// The keys of the reference's key tables: every table whose header's first cell is `key`; from each of its rows
    /// the first cell, which must be exactly one backticked key. Rows that break that rule are returned as problems.
    static func documentedKeys(_ markdown: String) -> (keys: [String], problems: [String]) {
        enum Table { case none, keys, other }
        func trimmed(_ s: Substring) -> String {
            String(
                s.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" })
                    .reversed()
            )
        }
        var keys: [String] = []
        var problems: [String] = []
        var table = Table.none
        var inCodeBlock = false
        for (number, rawLine) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = trimmed(rawLine)
            if line.hasPrefix("```") { inCodeBlock.toggle() }
            guard line.hasPrefix("|"), !inCodeBlock else {
                table = .none  // anything else ends a table
                continue
            }
            let first = trimmed(line.dropFirst().prefix(while: { $0 != "|" }))
            if table == .none {
                // The header row: a key table when its first cell is `key`.
                table = first.lowercased() == "key" ? .keys : .other
                continue
            }
            // delimiter row, other tables
            if first.allSatisfy({ $0 == "-" || $0 == ":" }) || table == .other { continue }
            let inner = first.dropFirst().dropLast()
            guard first.count > 2, first.hasPrefix("`"), first.hasSuffix("`"), !inner.contains("`") else {
                problems.append(
                    "line \(number + 1): the first cell of a key table row must be one `key`, not \"\(first)\""
                )
                continue
            }
            keys.append(String(inner))
        }
        return (keys, problems)
    }

    @Test func theReferenceListsExactlyTheKeysTheParserAccepts() throws {
        let markdown = String(decoding: try Data(contentsOf: Self.referenceURL), as: UTF8.self)
        let (documented, problems) = Self.documentedKeys(markdown)
        #expect(problems.isEmpty, "docs/configuration.md: \(problems.joined(separator: "; "))")

        let duplicates = Dictionary(grouping: documented, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(
            duplicates.isEmpty,
            "docs/configuration.md lists these keys more than once: \(duplicates.joined(separator: ", "))"
        )

        let known = Set(GatewayConfig.knownKeys)
        let listed = Set(documented)
        let undocumented = known.subtracting(listed).sorted()
        let unknown = listed.subtracting(known).sorted()
        #expect(
            undocumented.isEmpty,
            "the parser accepts keys docs/configuration.md does not document (add a row to its tables): \(undocumented.joined(separator: ", "))"
        )
        #expect(
            unknown.isEmpty,
            "docs/configuration.md documents keys the parser does not accept (remove the rows, or teach GatewayConfig): \(unknown.joined(separator: ", "))"
        )
    }

    /// The reference's complete example (the first `json` block after its "Complete example" heading) is a valid
    /// config: what the reference shows can be copied.
    @Test func theCompleteExampleParses() throws {
        let markdown = String(decoding: try Data(contentsOf: Self.referenceURL), as: UTF8.self)
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false)
        guard let heading = lines.firstIndex(where: { $0.hasPrefix("#") && $0.contains("Complete example") }),
            let open = lines[heading...].firstIndex(where: { $0.hasPrefix("```json") }),
            let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") })
        else {
            Issue.record("docs/configuration.md has no \"Complete example\" heading followed by a ```json block")
            return
        }
        let json = lines[(open + 1)..<close].joined(separator: "\n")
        do {
            let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: "/etc/iap-gateway")
            #expect(!config.apps.isEmpty && !config.downstreams.isEmpty)
        } catch {
            Issue.record("the complete example in docs/configuration.md does not parse: \(error)")
        }
    }

    /// The comparison above is only as good as `knownKeys`: it must name nested keys under their parents, and each
    /// parent must itself be a key, so that a nested object's members cannot be filed under the wrong path.
    @Test func knownKeysFormATree() {
        let known = Set(GatewayConfig.knownKeys)
        #expect(known.count == GatewayConfig.knownKeys.count, "knownKeys has duplicates")
        for key in GatewayConfig.knownKeys {
            guard let dot = key.lastIndex(of: ".") else { continue }
            var parent = String(key[..<dot])
            if parent.hasSuffix("[]") { parent.removeLast(2) }
            #expect(known.contains(parent), "\(key): its parent \(parent) is not a known key")
        }
        // Spot checks that the notation is the one the reference uses.
        for key in ["listen", "limits.connections", "downstreams[].url", "apps[].authority.production", "$comment"] {
            #expect(known.contains(key), "\(key) missing from knownKeys")
        }
    }

    @Test func theKeyTableReaderFindsKeyTablesOnly() {
        let markdown = """
            | flag | meaning |
            |---|---|
            | `--config FILE` | the file |

            | key | type | default | meaning |
            | --- | --- | --- | --- |
            | `listen` | string | `127.0.0.1:8080` | where |
            | `limits.connections` | integer | 1024 | how many |
            text between tables ends a table
            ```
            | key | meaning |
            | `in_a_code_block` | ignored |
            ```
            | key | meaning |
            |:--|--|
            | plain | no backticks |
            """
        let (keys, problems) = Self.documentedKeys(markdown)
        #expect(keys == ["listen", "limits.connections"])
        #expect(problems.count == 1 && problems[0].contains("plain"), "\(problems)")
    }
}
