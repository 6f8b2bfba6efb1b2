import Foundation
import Testing

/// docs/architecture.md's module table is the map a new reader trusts: every module under `Sources/` has its row, and
/// each row's `imports` cell names exactly the modules that module's sources import (the toolchain's own left out,
/// `nothing` for none).
@Suite struct ModuleTableTests {
    static let architecture = GatewayLayerTests.sources.deletingLastPathComponent()
        .appending(path: "docs/architecture.md")

    /// Modules of the toolchain and the platform, which the table leaves out.
    static let toolchain: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Synchronization", "Glibc", "Musl",
        "Darwin",
    ]

    /// The table's rows: module name → the modules its `imports` cell names.
    static func table(_ text: String) -> [String: Set<String>] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(of: "| module | holds | imports |") else { return [:] }
        var rows: [String: Set<String>] = [:]
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: " | ").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = cells.first, let last = cells.last else { continue }
            let module = first.trimmingCharacters(in: CharacterSet(charactersIn: "|` "))
            let named = last.trimmingCharacters(in: CharacterSet(charactersIn: "| "))
            rows[module] =
                named == "nothing"
                ? []
                : Set(named.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "` ")) })
        }
        return rows
    }

    /// The Swift modules of `Sources/` (C system-library targets, `C` and a capital, left out).
    static func modules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: GatewayLayerTests.sources.path()).filter { name in
            let scalars = Array(name.unicodeScalars)
            let isCLibrary =
                scalars.count > 1 && scalars[0] == "C" && CharacterSet.uppercaseLetters.contains(scalars[1])
            return !isCLibrary && !name.hasPrefix(".")
        }.sorted()
    }

    @Test func everyModuleHasARowThatNamesWhatItImports() throws {
        let rows = Self.table(try String(contentsOf: Self.architecture, encoding: .utf8))
        let modules = try Self.modules()
        #expect(modules.count > 20 && modules.contains("Gateway"), "the modules were found")
        for module in modules {
            let imported = Set(try GatewayLayerTests.imports(of: module).map(\.module)).subtracting(Self.toolchain)
            guard let row = rows[module] else {
                Issue.record("docs/architecture.md's module table has no row for \(module)")
                continue
            }
            #expect(
                row == imported,
                "\(module): the table names \(row.subtracting(imported).sorted()) it does not import, and omits \(imported.subtracting(row).sorted())"
            )
        }
        #expect(Set(rows.keys).isSubset(of: Set(modules)), "rows for modules that do not exist")
    }

    @Test func theTableIsReadAsWritten() {
        let text = """
            | module | holds | imports |
            |---|---|---|
            | `A` | things, with | pipes | nothing |
            | `B` | more | `CZlib`, A |

            | `C` | after the table | A |
            """
        #expect(Self.table(text) == ["A": [], "B": ["CZlib", "A"]])
    }
}
