import FoundationEssentials
import Testing

@testable import Gateway

/// The metrics catalogue: one entry per exported metric, each described in the exposition and in
/// docs/operations.md.
@Suite struct MetricCatalogueTests {
    @Test func namesAreUniqueAndFollowPrometheusConventions() {
        let names = Metric.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count)
        for metric in Metric.allCases {
            #expect(metric.rawValue.hasPrefix("iapgw_"))
            // Counters, and only counters, end in `_total`.
            #expect(metric.rawValue.hasSuffix("_total") == (metric.declaration.kind == .counter), "\(metric.rawValue)")
            #expect(!metric.declaration.help.isEmpty)
        }
    }

    @Test func everyMetricIsExportedWithItsHelpAndType() {
        let metrics = Metrics()
        Metric.describeAll(in: metrics)
        for metric in Metric.allCases {
            switch metric.declaration.kind {
            case .counter: metrics.increment(metric)
            case .gauge: metrics.set(metric, [:], 1)
            case .histogram: metrics.observe(metric, [:], 0.01)
            }
        }
        let text = metrics.render()
        for metric in Metric.allCases {
            let (kind, help) = metric.declaration
            #expect(text.contains("# HELP \(metric.rawValue) \(help)\n# TYPE \(metric.rawValue) \(kind.rawValue)\n"))
        }
        #expect(text.components(separatedBy: "# HELP ").count - 1 == Metric.allCases.count)
    }

    /// docs/operations.md, "Metrics": its table lists each metric (first cell) with its type (second cell).
    @Test func theOperationsGuideListsEveryMetricWithItsType() throws {
        let url = URL(filePath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "docs").appending(path: "operations.md")
        let markdown = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        var documented: [String: String] = [:]
        for line in markdown.split(separator: "\n") where line.hasPrefix("| `iapgw_") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            documented[String(cells[0].dropFirst().dropLast())] = cells[1]
        }
        let catalogue = Dictionary(
            uniqueKeysWithValues: Metric.allCases.map { ($0.rawValue, $0.declaration.kind.rawValue) }
        )
        #expect(documented == catalogue)
    }
}
