import Foundation
import Testing

/// README.md and every page of docs/ name files of this repository — links between the pages, `Sources/…` files,
/// test files, scripts, fixtures — and sections of other pages. Each of them must exist, so that a file moved or a
/// heading renamed fails the suite instead of leaving a reader at a dead end. Beside ``ConfigurationReferenceTests``,
/// which keeps the configuration reference and the parser's keys equal.
///
/// What is checked, outside fenced code blocks unless said otherwise:
/// - every Markdown link `[text](target)` (and reference definition `[label]: target`) that is relative: the target
///   file or folder exists, relative to the page; a `#anchor` is the GitHub slug of a heading of that page;
/// - every repository path — a word starting with `Sources/`, `Tests/`, `scripts/`, `docs/`, `config/`, `Fixtures/`,
///   `Benchmarks/`, `Fuzz/`, `.ci/` or `schemas/` — in code spans, fenced code blocks and prose: it exists, relative to the
///   repository's root; `*` and `?` match as in the shell (`Fixtures/v1/*.json`: at least one file); a path with a
///   placeholder (`Fixtures/v2/<name>.json`, `Sources/…`) is skipped;
/// - every section named after a page (`docs/operations.md, "Reconciliation"`, `configuration.md, *Environment
///   variables*`): the page has a heading of that name.
@Suite struct DocumentationLinksTests {
    /// The repository's root, found through this file's path (like `Fixtures.root`), so the working directory does
    /// not matter.
    static let root = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and the pages of docs/, as paths relative to the root.
    static let pages: [String] = {
        let docs =
            (try? FileManager.default.contentsOfDirectory(
                atPath: root.appending(path: "docs").path(percentEncoded: false)
            )) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    /// The folders a repository path starts with.
    static let repositoryFolders = [
        "Sources/", "Tests/", "scripts/", "docs/", "config/", "Fixtures/", "Benchmarks/", "Fuzz/", ".ci/", "schemas/",
    ]

    // MARK: Reading a page

    /// A page split into what its checks read: its paragraphs as written, their prose (code spans cut out), the code
    /// (spans and fenced blocks), and its headings. Each piece keeps the number of the line it starts on.
    struct Page {
        var paragraphs: [(line: Int, text: String)] = []
        var prose: [(line: Int, text: String)] = []
        var code: [(line: Int, text: String)] = []
        var headings: [String] = []

        init(_ markdown: String) {
            var fence: String?  // the opening fence's backticks or tildes while inside a fenced block
            var paragraph: [(line: Int, text: String)] = []
            func flush() {
                guard let first = paragraph.first else { return }
                let text = paragraph.map(\.text).joined(separator: "\n")
                paragraphs.append((first.line, text))
                Page.splitCodeSpans(text, firstLine: first.line, into: &self)
                paragraph = []
            }
            for (index, raw) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let number = index + 1
                let line = String(raw)
                let trimmed = line.drop(while: { $0 == " " })
                if let open = fence {
                    if trimmed.hasPrefix(open) && trimmed.allSatisfy({ $0 == open.first || $0 == " " }) {
                        fence = nil
                    } else {
                        code.append((number, line))
                    }
                    continue
                }
                if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                    flush()
                    let mark = trimmed.first!
                    fence = String(trimmed.prefix(while: { $0 == mark }))
                    continue
                }
                if trimmed.isEmpty {
                    flush()
                    continue
                }
                if trimmed.hasPrefix("#"), line.prefix(while: { $0 == " " }).count < 4 {
                    let level = trimmed.prefix(while: { $0 == "#" })
                    if level.count <= 6, trimmed.dropFirst(level.count).first == " " {
                        flush()
                        headings.append(String(trimmed.dropFirst(level.count)).trimmingCharacters(in: .whitespaces))
                        paragraph.append((number, line))
                        flush()
                        continue
                    }
                }
                paragraph.append((number, line))
            }
            flush()
        }

        /// Cuts a paragraph's code spans (a run of n backticks up to the next run of exactly n) out of its prose.
        /// A run without its closing run is literal text.
        static func splitCodeSpans(_ text: String, firstLine: Int, into page: inout Page) {
            let characters = Array(text)
            var prose = ""
            var line = firstLine
            var i = 0
            func run(at j: Int) -> Int {
                var k = j
                while k < characters.count, characters[k] == "`" { k += 1 }
                return k - j
            }
            while i < characters.count {
                guard characters[i] == "`" else {
                    if characters[i] == "\n" { line += 1 }
                    prose.append(characters[i])
                    i += 1
                    continue
                }
                let length = run(at: i)
                var j = i + length
                var close: Int?
                while j < characters.count {
                    if characters[j] == "`" {
                        let other = run(at: j)
                        if other == length {
                            close = j
                            break
                        }
                        j += other
                    } else {
                        j += 1
                    }
                }
                guard let end = close else {
                    prose.append(contentsOf: String(repeating: "`", count: length))
                    i += length
                    continue
                }
                let span = String(characters[(i + length)..<end])
                page.code.append((line, span))
                prose.append(" ")  // a span separates the words around it
                line += span.filter { $0 == "\n" }.count
                i = end + length
            }
            if !prose.isEmpty { page.prose.append((firstLine, prose)) }
        }
    }

    /// GitHub's anchor of a heading: the rendered text lowercased, every character but letters, digits, spaces,
    /// hyphens and underscores dropped, spaces turned into hyphens. Markdown links in a heading count by their text.
    static func slug(_ heading: String) -> String {
        var text = heading
        // [text](target) → text
        while let open = text.range(of: "]("), let close = text[open.upperBound...].firstIndex(of: ")") {
            text.removeSubrange(open.lowerBound...close)
        }
        var slug = ""
        for character in text.lowercased() {
            if character == " " {
                slug.append("-")
            } else if character == "-" || character == "_" || character.isLetter || character.isNumber {
                slug.append(character)
            }
        }
        return slug
    }

    /// The anchors of a page's headings; a repeated heading gets `-1`, `-2`, … as on GitHub.
    static func anchors(of headings: [String]) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors = Set<String>()
        for heading in headings {
            let base = slug(heading)
            if let count = seen[base] {
                anchors.insert("\(base)-\(count)")
                seen[base] = count + 1
            } else {
                anchors.insert(base)
                seen[base] = 1
            }
        }
        return anchors
    }

    /// The targets of the Markdown links and reference definitions in prose.
    static func linkTargets(_ prose: String) -> [String] {
        var targets: [String] = []
        let characters = Array(prose)
        var i = 0
        while i + 1 < characters.count {
            if characters[i] == "]", characters[i + 1] == "(" {
                var j = i + 2
                var depth = 0
                var target = ""
                while j < characters.count {
                    let c = characters[j]
                    if c == "(" { depth += 1 }
                    if c == ")" {
                        if depth == 0 { break }
                        depth -= 1
                    }
                    target.append(c)
                    j += 1
                }
                if j < characters.count {
                    // `(target "title")`: the target is the first word; `(<target>)` is unwrapped.
                    var first = String(target.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
                    if first.hasPrefix("<"), first.hasSuffix(">") { first = String(first.dropFirst().dropLast()) }
                    if !first.isEmpty { targets.append(first) }
                }
                i = j
                continue
            }
            i += 1
        }
        for line in prose.split(separator: "\n") {
            // [label]: target
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix("["), let close = trimmed.range(of: "]: ") else { continue }
            if let target = trimmed[close.upperBound...].split(separator: " ").first { targets.append(String(target)) }
        }
        return targets
    }

    /// A link to somewhere else than this repository: a scheme (`https:`, `mailto:`) or a protocol-relative URL.
    static func isExternal(_ target: String) -> Bool {
        if target.hasPrefix("//") { return true }
        guard let colon = target.firstIndex(of: ":") else { return false }
        let scheme = target[..<colon]
        return !scheme.isEmpty
            && scheme.allSatisfy { $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }
    }

    /// The words of `text` that are repository paths: split at white space and at the characters around paths in
    /// prose, shell lines and JSON; trailing punctuation dropped.
    static func repositoryPaths(_ text: String) -> [String] {
        let separators: Set<Character> = [
            " ", "\n", "\t", ",", "(", ")", "\"", "'", "=", "@", ";", "|", "[", "]", "{", "}", "`",
        ]
        var paths: [String] = []
        for word in text.split(whereSeparator: { separators.contains($0) }) {
            guard repositoryFolders.contains(where: { word.hasPrefix($0) }) else { continue }
            var path = String(word)
            while let last = path.last, ".:!?".contains(last) { path.removeLast() }
            paths.append(path)
        }
        return paths
    }

    /// Whether a path stands for many (`Fixtures/v2/<name>.json`, `Sources/…`): skipped, not checked.
    static func hasPlaceholder(_ path: String) -> Bool {
        path.contains("<") || path.contains(">") || path.contains("…")
    }

    /// Whether `path` (relative to `base`, `*` and `?` matching within one component) names at least one file or
    /// folder. A trailing `/` asks for a folder.
    static func exists(_ path: String, under base: URL) -> Bool {
        let wantsFolder = path.hasSuffix("/")
        let components = path.split(separator: "/").map(String.init)
        var candidates = [base]
        for (index, component) in components.enumerated() {
            let last = index == components.count - 1
            var next: [URL] = []
            for folder in candidates {
                if component == "." {
                    next.append(folder)
                } else if component == ".." {
                    next.append(folder.deletingLastPathComponent())
                } else if component.contains("*") || component.contains("?") {
                    let names =
                        (try? FileManager.default.contentsOfDirectory(atPath: folder.path(percentEncoded: false))) ?? []
                    next += names.filter { matches(component, $0) }.sorted().map { folder.appending(path: $0) }
                } else {
                    next.append(folder.appending(path: component))
                }
            }
            candidates = next.filter { url in
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isFolder)
                else { return false }
                return last ? (!wantsFolder || isFolder.boolValue) : isFolder.boolValue
            }
            if candidates.isEmpty { return false }
        }
        return !candidates.isEmpty
    }

    /// Shell-style matching of one path component: `*` any run of characters, `?` any one.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        let p = Array(pattern)
        let n = Array(name)
        func match(_ i: Int, _ j: Int) -> Bool {
            if i == p.count { return j == n.count }
            if p[i] == "*" { return (j...n.count).contains { match(i + 1, $0) } }
            guard j < n.count, p[i] == "?" || p[i] == n[j] else { return false }
            return match(i + 1, j + 1)
        }
        return match(0, 0)
    }

    /// `page` resolved against the folder of `from` (both relative to the root), `..` and `.` applied.
    static func resolve(_ target: String, from page: String) -> String {
        var parts = page.split(separator: "/").dropLast().map(String.init)
        for component in target.split(separator: "/") {
            if component == "." { continue }
            if component == ".." { if !parts.isEmpty { parts.removeLast() } } else { parts.append(String(component)) }
        }
        return parts.joined(separator: "/")
    }

    /// Sections named after a page in a paragraph: `PAGE.md, "Heading"`, `PAGE.md ("Heading"`, `PAGE.md, *Heading*`,
    /// the page's name in a code span or not (`` `docs/x.md`, "H" `` reads the same way).
    static func sectionReferences(_ text: String) -> [(page: String, heading: String)] {
        var found: [(String, String)] = []
        var rest = Substring(text)
        while let md = rest.range(of: ".md") {
            // the page: the word ending at ".md"
            let before = rest[..<md.lowerBound]
            let start =
                before.lastIndex(where: { " \n(`\"".contains($0) }).map { before.index(after: $0) } ?? before.startIndex
            let page = String(rest[start..<md.upperBound])
            var after = rest[md.upperBound...]
            rest = after
            if after.hasPrefix("`") { after = after.dropFirst() }
            if after.hasPrefix(",") { after = after.dropFirst() }
            guard after.hasPrefix(" ") else { continue }
            after = after.dropFirst()
            if after.hasPrefix("(") { after = after.dropFirst() }
            guard let quote = after.first, quote == "\"" || quote == "*" else { continue }
            let inside = after.dropFirst()
            guard let end = inside.firstIndex(of: quote) else { continue }
            let heading = String(inside[..<end]).replacingOccurrences(of: "\n", with: " ")
            guard !heading.isEmpty, !page.isEmpty else { continue }
            found.append((page, heading))
        }
        return found
    }

    // MARK: The checks

    static func read(_ page: String) throws -> Page {
        Page(String(decoding: try Data(contentsOf: root.appending(path: page)), as: UTF8.self))
    }

    @Test func findsThePages() {
        #expect(Self.pages.contains("README.md"))
        #expect(Self.pages.contains("docs/configuration.md"))
        #expect(Self.pages.count >= 5)
    }

    @Test func everyRelativeLinkResolves() throws {
        var problems: [String] = []
        for page in Self.pages {
            for (line, prose) in try Self.read(page).prose {
                for target in Self.linkTargets(prose) where !Self.isExternal(target) {
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                    let path = String(parts[0])
                    let anchor = parts.count > 1 ? String(parts[1]) : nil
                    let file = path.isEmpty ? page : Self.resolve(path, from: page)
                    guard Self.exists(file, under: Self.root) else {
                        problems.append("\(page):\(line): \(target): no such file")
                        continue
                    }
                    guard let anchor, !anchor.isEmpty else { continue }
                    guard file.hasSuffix(".md") else {
                        problems.append("\(page):\(line): \(target): an anchor into a file that is not Markdown")
                        continue
                    }
                    let anchors = Self.anchors(of: try Self.read(file).headings)
                    if !anchors.contains(anchor.lowercased()) {
                        problems.append("\(page):\(line): \(target): \(file) has no heading with the anchor #\(anchor)")
                    }
                }
            }
        }
        #expect(problems.isEmpty, "broken links:\n\(problems.joined(separator: "\n"))")
    }

    @Test func everyRepositoryPathExists() throws {
        var problems: [String] = []
        var checked = 0
        for page in Self.pages {
            let document = try Self.read(page)
            for (line, text) in document.code + document.prose {
                for path in Self.repositoryPaths(text) {
                    if Self.hasPlaceholder(path) { continue }  // stands for many files: skipped on purpose
                    checked += 1
                    let parts = path.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                    let file = String(parts[0])
                    if !Self.exists(file, under: Self.root) {
                        problems.append("\(page):\(line): \(path): no such file or folder in the repository")
                    } else if parts.count > 1, file.hasSuffix(".md"),
                        !Self.anchors(of: try Self.read(file).headings).contains(String(parts[1]).lowercased())
                    {
                        problems.append("\(page):\(line): \(path): \(file) has no heading with the anchor #\(parts[1])")
                    }
                }
            }
        }
        #expect(checked > 50, "found only \(checked) repository paths: the reader is broken")
        #expect(problems.isEmpty, "paths that do not exist:\n\(problems.joined(separator: "\n"))")
    }

    @Test func everyNamedSectionExists() throws {
        var problems: [String] = []
        for page in Self.pages {
            for (line, paragraph) in try Self.read(page).paragraphs {
                for (target, heading) in Self.sectionReferences(paragraph) {
                    let file =
                        Self.repositoryFolders.contains(where: { target.hasPrefix($0) }) || target == "README.md"
                        ? target : Self.resolve(target, from: page)
                    guard Self.exists(file, under: Self.root) else {
                        problems.append("\(page):\(line): \(target): no such file")
                        continue
                    }
                    if !Self.anchors(of: try Self.read(file).headings).contains(Self.slug(heading)) {
                        problems.append("\(page):\(line): \(target) has no section \"\(heading)\"")
                    }
                }
            }
        }
        #expect(problems.isEmpty, "sections that do not exist:\n\(problems.joined(separator: "\n"))")
    }

    // MARK: The reader itself

    @Test func theReaderSeparatesProseCodeAndHeadings() {
        let page = Page(
            """
            # The `iap-gateway verify` command
            See [the reference](docs/configuration.md#apps) and `Sources/Gateway/A.swift`, or ``Tests/X `y` .swift``.
            A span may run over a line: `scripts/with-postgres
            .build/release/iap-gateway`.
            ```sh
            # not a heading
            curl --data-binary @Fixtures/v2/a.json [x](ignored.md)
            ```
            Two `` unclosed stay text, then `docs/operations.md`, "Reconciliation";
            [b]: ../README.md
            ## Same
            ## Same
            """
        )
        #expect(page.headings == ["The `iap-gateway verify` command", "Same", "Same"])
        #expect(Self.anchors(of: page.headings) == ["the-iap-gateway-verify-command", "same", "same-1"])
        let code = page.code.map(\.text)
        #expect(code.contains("Sources/Gateway/A.swift"))
        #expect(code.contains("Tests/X `y` .swift"))
        #expect(code.contains("scripts/with-postgres\n.build/release/iap-gateway"))
        #expect(code.contains("curl --data-binary @Fixtures/v2/a.json [x](ignored.md)"))
        #expect(code.contains("# not a heading"))
        let prose = page.prose.map(\.text).joined(separator: "\n")
        #expect(Self.linkTargets(prose) == ["docs/configuration.md#apps", "../README.md"])
        #expect(Self.repositoryPaths(code.joined(separator: "\n")).contains("Fixtures/v2/a.json"))
        #expect(Self.repositoryPaths(prose) == ["docs/configuration.md#apps"])
        #expect(code.contains("docs/operations.md"))
        #expect(
            Self.sectionReferences(page.paragraphs.map(\.text).joined(separator: "\n")).map {
                "\($0.page)|\($0.heading)"
            } == ["docs/operations.md|Reconciliation"]
        )
        // Line numbers follow the page: the link is on line 2, the fenced block's lines are 6 and 7.
        #expect(page.prose.first?.line == 1)
        #expect(page.code.first(where: { $0.text.hasPrefix("curl") })?.line == 7)
    }

    @Test func slugsAreGitHubs() {
        #expect(Self.slug("Moving from SQLite to PostgreSQL") == "moving-from-sqlite-to-postgresql")
        #expect(Self.slug("`apps[]`") == "apps")
        #expect(Self.slug("`listen_tls`") == "listen_tls")
        #expect(Self.slug("The store's disk") == "the-stores-disk")
        #expect(
            Self.slug("Versions, and what the gateway never touches") == "versions-and-what-the-gateway-never-touches"
        )
        #expect(Self.slug("What \"authenticated\" means for V2") == "what-authenticated-means-for-v2")
        #expect(Self.slug("Limits, and running behind a reverse proxy") == "limits-and-running-behind-a-reverse-proxy")
    }

    @Test func pathsResolveWithGlobsAndPlaceholders() {
        #expect(Self.exists("Fixtures/v2/*.json", under: Self.root))
        #expect(!Self.exists("Fixtures/v2/*.nothing", under: Self.root))
        #expect(Self.exists("docs/", under: Self.root))
        #expect(!Self.exists("README.md/", under: Self.root))
        #expect(Self.exists("Sources/C*", under: Self.root))
        #expect(Self.hasPlaceholder("Fixtures/v2/<name>.json") && Self.hasPlaceholder("Sources/…"))
        #expect(Self.resolve("../README.md", from: "docs/operations.md") == "README.md")
        #expect(Self.resolve("configuration.md", from: "docs/operations.md") == "docs/configuration.md")
        #expect(Self.isExternal("https://developer.apple.com") && !Self.isExternal("docs/a.md#b:c"))
    }
}
