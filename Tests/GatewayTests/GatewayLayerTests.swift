import Foundation
import Testing

/// Package.swift's layers: the service (`Gateway`) never reaches up into the command line, the report rendering or
/// the simulator — those depend on it, and `serve` hands the service what it needs (the report renderer).
@Suite struct GatewayLayerTests {
    static let sources = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appending(path: "Sources")

    /// The modules each Swift file under `Sources/<module>` imports, by file.
    static func imports(of module: String) throws -> [(file: String, module: String)] {
        let folder = sources.appending(path: module)
        let files =
            FileManager.default.enumerator(atPath: folder.path())?.compactMap { $0 as? String }.filter {
                $0.hasSuffix(".swift")
            } ?? []
        var out: [(String, String)] = []
        for file in files.sorted() {
            let text = try String(contentsOf: folder.appending(path: file), encoding: .utf8)
            for line in text.split(whereSeparator: \.isNewline) {
                var words = line.split(whereSeparator: \.isWhitespace)[...]
                while let first = words.first,
                    first.hasPrefix("@") || ["public", "package", "internal", "fileprivate", "private"].contains(first)
                {
                    words = words.dropFirst()
                }
                guard words.first == "import", let name = words.dropFirst().last else { continue }
                out.append((file, String(name.split(separator: ".").first ?? name)))
            }
        }
        return out
    }

    @Test func gatewayImportsNeitherCommandsNorReportsNorTheSimulator() throws {
        let all = try Self.imports(of: "Gateway")
        #expect(all.count > 50, "the Gateway sources were found")
        let upward = all.filter { ["GatewayCLI", "Reports", "Simulator"].contains($0.module) }
        #expect(upward.isEmpty, "\(upward)")
    }

    /// The layers below the service: the store, the team's database, the adapters and the simulated App Store never
    /// import what is built on them; the team database's writers are a contract of their own, apart from the store.
    @Test(arguments: [
        ("Store", ["Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks", "TeamDatabase"]),
        ("TeamDatabase", ["Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks", "Store"]),
        ("V1Adapter", ["Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks", "Store"]),
        ("V2Adapter", ["Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks", "Store"]),
        (
            "Simulator",
            ["Gateway", "GatewayCLI", "Reports", "SimulatorServer", "Benchmarks", "Store", "HTTPServer", "HTTPClient"]
        ),
        ("Gateway", ["SimulatorServer", "Benchmarks"]),
        // A feature target stands on the kernel, never on the service that assembles it.
        ("RefundRequests", ["Gateway", "GatewayCLI", "Reports", "ReportModel", "Simulator", "Benchmarks", "TestPKI"]),
        (
            "ReceiptPath",
            ["Gateway", "GatewayCLI", "Reports", "ReportModel", "Simulator", "Benchmarks", "TestPKI", "RefundRequests"]
        ),
        // The kernel knows no feature: every feature depends on it, never the other way (docs/architecture.md).
        (
            "ServiceKit",
            [
                "Gateway", "GatewayCLI", "Reports", "ReportModel", "Simulator", "SimulatorServer", "Benchmarks",
                "Policy", "V1Adapter", "Receipts", "TeamDatabase", "AppStoreConnect", "TestPKI", "RefundRequests",
                "ReceiptPath",
            ]
        ),
        (
            "Policy",
            [
                "Store", "Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks", "V1Adapter",
                "V2Adapter", "WireJSON", "SQLite", "Postgres", "HTTPClient",
            ]
        ),
        ("ReportModel", ["Gateway", "GatewayCLI", "Reports", "Simulator", "SimulatorServer", "Benchmarks"]),
        ("Reports", ["Gateway", "GatewayCLI", "Simulator", "SimulatorServer", "Benchmarks"]),
        ("SimulatorServer", ["GatewayCLI", "Reports", "Benchmarks", "Store"]),
        ("Benchmarks", ["GatewayCLI", "Reports", "Simulator", "SimulatorServer"]),
        // The test PKIs and receipt builders serve the simulator, the benchmarks and the tests: never the product's
        // trust or service code.
        ("Crypto", ["TestPKI"]), ("ApplePKI", ["TestPKI", "Receipts", "V2Adapter"]), ("Receipts", ["TestPKI"]),
        ("V1Adapter", ["TestPKI"]),
        ("V2Adapter", ["TestPKI"]), ("Store", ["TestPKI"]), ("Gateway", ["TestPKI"]),
        ("TestPKI", ["Gateway", "Simulator", "Store", "V2Adapter", "V1Adapter"]),
        // The contracts describe the other modules' output and depend on none of them (docs/contracts.md).
        (
            "Contracts",
            [
                "Canonical", "Store", "Gateway", "GatewayCLI", "Reports", "ReportModel", "Simulator", "SimulatorServer",
                "Benchmarks", "HTTPServer", "TeamDatabase",
            ]
        ),
    ])
    func lowerLayersNeverImportUpperOnes(module: String, forbidden: [String]) throws {
        let all = try Self.imports(of: module)
        #expect(!all.isEmpty, "the \(module) sources were found")
        let upward = all.filter { forbidden.contains($0.module) }
        #expect(upward.isEmpty, "\(upward)")
    }

    @Test func reportsDoNotImportTheCommands() throws {
        #expect(
            try Self.imports(of: "Reports").filter { $0.module == "GatewayCLI" || $0.module == "Simulator" }.isEmpty
        )
    }

    /// The service's own folders: `Service/` only wires the parts together; nothing outside it names the service.
    @Test func onlyTheServiceFolderNamesTheService() throws {
        let folder = Self.sources.appending(path: "Gateway")
        let files =
            FileManager.default.enumerator(atPath: folder.path())?.compactMap { $0 as? String }.filter {
                $0.hasSuffix(".swift") && !$0.hasPrefix("Service/")
            } ?? []
        #expect(files.count > 30, "the Gateway sources were found")
        let naming = try files.filter { file in
            try String(contentsOf: folder.appending(path: file), encoding: .utf8).contains("GatewayService")
        }
        #expect(naming.isEmpty, "\(naming)")
    }

    /// The composition root stays a list of parts: the service's `init` hands each builder what it needs
    /// (`GatewayService+Build.swift`) and stays short enough to read at a glance.
    @Test func theServiceInitIsAListOfParts() throws {
        let text = try String(
            contentsOf: Self.sources.appending(path: "Gateway/Service/GatewayService.swift"),
            encoding: .utf8
        )
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(
            lines.firstIndex { $0.hasPrefix("    public init(config: GatewayConfig, dependencies:") }
        )
        let end = try #require(lines[start...].firstIndex { $0 == "    }" })
        #expect(end - start + 1 <= 80, "GatewayService.init is \(end - start + 1) lines")
    }

    /// What every part records through (`Log`, `Metrics`, `Metric`) imports neither the store nor a part: each part
    /// declares its own metrics beside its code (docs/architecture.md, "The service").
    @Test func observabilityImportsNoStoreAndNoPart() throws {
        let imports = try Self.imports(of: "ServiceKit").filter { $0.file.hasPrefix("Observability/") }
        #expect(!imports.isEmpty, "the Observability sources were found")
        let allowed: Set = ["FoundationEssentials", "Synchronization", "WireJSON", "Glibc"]
        let others = imports.filter { !allowed.contains($0.module) }
        #expect(others.isEmpty, "\(others)")
    }

    /// Each background worker reaches the store only through the slices of its interface it names
    /// (docs/architecture.md, "The store's interface"), never the whole transaction.
    @Test(arguments: [
        "Delivery/DeliveryWorker.swift", "Ingest/V1VerificationWorker.swift", "Compare/CompareWorker.swift",
        "Reconcile/ReconcileWorker.swift", "Jobs/RetentionWorker.swift",
    ])
    func workersTakeOnlyTheirSliceOfTheStore(file: String) throws {
        let text = try String(contentsOf: Self.sources.appending(path: "Gateway/" + file), encoding: .utf8)
        #expect(text.contains("typealias Transaction = any "))
        #expect(text.contains("StoreSlice<Transaction>"))
        #expect(!text.contains("any StoreTransaction"))
        #expect(!text.contains("context.store."), "the whole store, past the slice")
    }
}
