import Foundation
import Testing

/// Every SQL text of the store is written once (docs/architecture.md, "The store"): a statement both databases run, or
/// two readers share, is one constant, so the two copies cannot drift apart.
@Suite struct SQLTextsTests {
    static let storeSources = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "Sources/Store")

    /// The string literals of a Swift source that read as SQL statements, whitespace folded and placeholders (`?`,
    /// `$1`) written alike, so that the same statement in SQLite's and PostgreSQL's spelling counts as one.
    static func statements(in text: String) -> [String] {
        var found: [String] = []
        let patterns = [#""""\n(.*?)""""#, #""((?:SELECT|INSERT|UPDATE|DELETE|WITH) [^"\n]*)""#]
        for pattern in patterns {
            let regex = try! NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators])
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 1), in: text) else { continue }
                let folded = text[range].split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    .replacingOccurrences(of: #"\$[0-9]+"#, with: "?", options: .regularExpression)
                let head = folded.prefix(7).uppercased()
                guard ["SELECT ", "INSERT ", "UPDATE ", "DELETE ", "WITH "].contains(where: head.hasPrefix),
                    folded.count > 40
                else { continue }
                found.append(folded)
            }
        }
        return found
    }

    @Test func noStatementIsWrittenTwice() throws {
        var seen: [String: [String]] = [:]
        let files = FileManager.default.enumerator(atPath: Self.storeSources.path())?.compactMap { $0 as? String } ?? []
        #expect(files.count > 20)
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: Self.storeSources.appending(path: file), encoding: .utf8)
            for statement in Self.statements(in: text) { seen[statement, default: []].append(file) }
        }
        #expect(seen.count > 50, "the scan finds the store's statements")
        let twice = seen.filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "\(twice.map { "\($0.value): \($0.key.prefix(120))" })")
    }
}
