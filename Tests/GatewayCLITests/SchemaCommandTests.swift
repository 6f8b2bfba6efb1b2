import Contracts
import Foundation
import Testing
import WireJSON

@testable import GatewayCLI

/// `iap-gateway schema`, the built binary in a process of its own: every contract printed self-contained (what a team
/// generates types from without the repository), the list without a name, usage errors with status 2.
@Suite struct SchemaCommandTests {
    static func run(_ arguments: [String]) throws -> (status: Int32, out: [UInt8], err: String) {
        let process = Process()
        process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
        process.arguments = ["schema"] + arguments
        let (out, err) = (Pipe(), Pipe())
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        let printed = Array(out.fileHandleForReading.readDataToEndOfFile())
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, printed, said)
    }

    @Test(arguments: Contracts.documents.map(\.name))
    func eachContractIsPrintedSelfContained(_ name: String) throws {
        let r = try Self.run([name])
        #expect(r.status == 0 && r.err.isEmpty)
        #expect(r.out == (try Contracts.bundled(try #require(Contracts.document(named: name)))))
        let document = try #require(try JSONParser.parse(r.out).objectValue)
        #expect(document["$schema"] != nil || document["openapi"] == .string("3.1.0"))
    }

    @Test func withoutANameItListsEveryContract() throws {
        let r = try Self.run([])
        #expect(r.status == 0)
        let names = String(decoding: r.out, as: UTF8.self).split(separator: "\n").map {
            String($0.split(separator: " ")[0])
        }
        #expect(names == Contracts.documents.map(\.name))
    }

    @Test func aNameItDoesNotKnowOrTwoNamesAreUsageErrors() async throws {
        let unknown = try Self.run(["events"])
        #expect(unknown.status == 2 && unknown.out.isEmpty)
        #expect(unknown.err.contains("schema: no contract named events (event, state, envelope,"), "\(unknown.err)")
        await CommandLineTests.expectUsage(SchemaCommand.self, ["event", "state"], "schema: unexpected argument state")
        await CommandLineTests.expectUsage(SchemaCommand.self, ["--pretty", "event"], "unknown option --pretty")
        let help = try Self.run(["event", "--help"])
        #expect(help.status == 0 && String(decoding: help.out, as: UTF8.self).hasPrefix("  iap-gateway schema [NAME]"))
    }
}
