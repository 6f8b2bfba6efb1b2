import Foundation
import ServiceKit
import Testing

@testable import Gateway

/// The metrics catalogue: each part's metrics, declared beside its code and joined in the composition root; each
/// described in the exposition and in docs/operations.md.
@Suite struct MetricCatalogueTests {
    static let catalogue = GatewayService.metricCatalogue
    /// The modules whose parts declare metrics.
    static let modules = ["ServiceKit", "RefundRequests", "ReceiptPath", "Gateway"]

    static let repository = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func namesAreUniqueAndFollowPrometheusConventions() {
        let names = Self.catalogue.map(\.name)
        #expect(names.count > 40, "the catalogue holds every part's metrics")
        #expect(Set(names).count == names.count, "a metric in two parts' lists: \(names)")
        for metric in Self.catalogue {
            #expect(metric.name.hasPrefix("iapgw_"))
            // Counters, and only counters, end in `_total`.
            #expect(metric.name.hasSuffix("_total") == (metric.kind == .counter), "\(metric.name)")
            #expect(!metric.help.isEmpty)
            // Buckets: a histogram's, rising; no other kind has any.
            #expect(metric.buckets.isEmpty == (metric.kind != .histogram), "\(metric.name)")
            #expect(zip(metric.buckets, metric.buckets.dropFirst()).allSatisfy { $0 < $1 }, "\(metric.name)")
        }
    }

    /// A metric declared by a part (`static let … = counter("iapgw_…", …)`) but left out of its list would be
    /// recorded without its `# HELP`/`# TYPE` lines; one name declared by two parts would be two metrics in one.
    /// The names are read from the sources: every `"iapgw_…"` string in the service's modules is a metric's
    /// declaration.
    @Test func everyDeclaredMetricIsDeclaredOnceAndInTheCatalogue() throws {
        var declared: [String: [String]] = [:]  // name → files declaring it
        for module in Self.modules {
            let folder = Self.repository.appending(path: "Sources").appending(path: module)
            let files =
                FileManager.default.enumerator(atPath: folder.path())?.compactMap { $0 as? String }.filter {
                    $0.hasSuffix(".swift")
                } ?? []
            for file in files.sorted() {
                let text = try String(contentsOf: folder.appending(path: file), encoding: .utf8)
                for piece in text.components(separatedBy: "\"iapgw_").dropFirst() {
                    guard let end = piece.firstIndex(of: "\"") else { continue }
                    declared["iapgw_" + piece[..<end], default: []].append(module + "/" + file)
                }
            }
        }
        #expect(declared.count > 40, "the declarations were found")
        let twice = declared.filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "declared more than once: \(twice)")
        let listed = Set(Self.catalogue.map(\.name))
        #expect(Set(declared.keys).subtracting(listed).isEmpty, "declared, not in the catalogue")
        #expect(listed.subtracting(declared.keys).isEmpty, "in the catalogue, not found in the sources")
    }

    @Test func everyMetricIsExportedWithItsHelpAndType() {
        let metrics = Metrics()
        metrics.describe(Self.catalogue)
        for metric in Self.catalogue {
            switch metric.kind {
            case .counter: metrics.increment(metric)
            case .gauge: metrics.set(metric, [:], 1)
            case .histogram: metrics.observe(metric, [:], 0.01)
            }
        }
        let text = metrics.render()
        for metric in Self.catalogue {
            #expect(
                text.contains("# HELP \(metric.name) \(metric.help)\n# TYPE \(metric.name) \(metric.kind.rawValue)\n")
            )
        }
        #expect(text.components(separatedBy: "# HELP ").count - 1 == Self.catalogue.count)
    }

    /// docs/operations.md, "Metrics": its table lists each metric (first cell) with its type (second cell).
    @Test func theOperationsGuideListsEveryMetricWithItsType() throws {
        let url = Self.repository.appending(path: "docs").appending(path: "operations.md")
        let markdown = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        var documented: [String: String] = [:]
        for line in markdown.split(separator: "\n") where line.hasPrefix("| `iapgw_") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            documented[String(cells[0].dropFirst().dropLast())] = cells[1]
        }
        let catalogue = Dictionary(uniqueKeysWithValues: Self.catalogue.map { ($0.name, $0.kind.rawValue) })
        #expect(documented == catalogue)
    }
}
