import Foundation
import Testing

/// docs/architecture.md, "The canonical event" and Package.swift: `Canonical` is a pure model that imports nothing.
@Suite struct CanonicalDependencyTests {
    static let sourceFolder = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/Canonical")

    static let sourceNames: [String] = {
        let items = (try? FileManager.default.contentsOfDirectory(atPath: sourceFolder.path())) ?? []
        return items.filter { $0.hasSuffix(".swift") }.sorted()
    }()

    /// Lines that are an import declaration, with or without attributes and access level
    /// (`import X`, `public import X`, `@_exported import X`, `@testable internal import struct X.Y`).
    static func importLines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { line in
            guard !line.hasPrefix("//") else { return false }
            let words = line.split(whereSeparator: \.isWhitespace)
            var rest = words[...]
            while let first = rest.first,
                first.hasPrefix("@") || ["public", "package", "internal", "fileprivate", "private"].contains(first)
            {
                rest = rest.dropFirst()
            }
            return rest.first == "import"
        }
    }

    @Test func findsTheCanonicalSources() {
        #expect(Self.sourceNames.contains("CanonicalEvent.swift"))
        #expect(Self.sourceNames.contains("Entitlement.swift"))
        #expect(Self.sourceNames.contains("Vocabulary.swift"))
    }

    @Test func theDetectorSeesEveryImportForm() {
        let sample = """
            import Foundation
              public import FoundationEssentials
            @_exported import Glibc
            @testable internal import struct Crypto.SHA256
            // import Commented
            let importance = 1
            """
        #expect(Self.importLines(sample).count == 4)
    }

    @Test(arguments: sourceNames)
    func canonicalSourceImportsNothing(_ name: String) throws {
        let text = try String(contentsOf: Self.sourceFolder.appending(path: name), encoding: .utf8)
        #expect(!text.isEmpty)
        #expect(Self.importLines(text) == [], "\(name) imports a module")
    }
}
