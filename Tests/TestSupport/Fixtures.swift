public import Crypto
public import FoundationEssentials
public import V2Adapter

/// The repository's `Fixtures/` folder, found through this file's path (the SwiftPM pattern), so tests never
/// depend on the working directory and never read anything outside the repository.
public enum Fixtures {
    public static let root: URL = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Fixtures")

    public static func url(_ path: String) -> URL { root.appending(path: path) }

    public static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: url(path))) }

    public static func text(_ path: String) throws -> String { String(decoding: try bytes(path), as: UTF8.self) }

    /// Body files in `folder` (`*.json` without the `.expected.json` goldens), sorted.
    public static func names(in folder: String) -> [String] {
        let items = (try? FileManager.default.contentsOfDirectory(atPath: url(folder).path())) ?? []
        return items.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") }.sorted()
    }

    /// `name.json` → `name.expected.json`.
    public static func goldenName(_ name: String) -> String { String(name.dropLast(5)) + ".expected.json" }

    /// Reads one member of a fixture file: the token in `signedPayload` / `signedTransaction` / `signedRenewalInfo`.
    public static func token(_ path: String, member: String = "signedPayload") throws -> [UInt8] {
        let object = try JSONSerializationLite.object(try bytes(path))
        guard let s = object[member] else { throw FixtureError(description: "\(path) has no \(member)") }
        return Array(s.utf8)
    }

    /// The string members of a fixture object, plus `outer.inner` for string members of nested objects.
    public static func jsonStrings(_ path: String) throws -> [String: String] {
        try JSONSerializationLite.flatStrings(try bytes(path))
    }

    /// When set, golden-file tests rewrite the goldens instead of comparing (review the diff before committing).
    public static var updatingGoldens: Bool { ProcessInfo.processInfo.environment["IAPGW_UPDATE_GOLDENS"] == "1" }

    public static func writeGolden(_ path: String, _ bytes: [UInt8]) throws {
        try Data(bytes + [0x0A]).write(to: url(path))
    }
}

public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// Minimal string-member extraction for fixture files (tests must not depend on the code under test for this).
enum JSONSerializationLite {
    static func object(_ bytes: [UInt8]) throws -> [String: String] {
        let decoded = try JSONDecoder().decode([String: LooseValue].self, from: Data(bytes))
        return decoded.compactMapValues { if case .string(let s) = $0 { s } else { nil } }
    }

    static func flatStrings(_ bytes: [UInt8]) throws -> [String: String] {
        let decoded = try JSONDecoder().decode([String: LooseValue].self, from: Data(bytes))
        var out: [String: String] = [:]
        for (k, v) in decoded {
            switch v {
            case .string(let s): out[k] = s
            case .object(let o): for (ik, iv) in o { if case .string(let s) = iv { out["\(k).\(ik)"] = s } }
            case .other: break
            }
        }
        return out
    }

    indirect enum LooseValue: Decodable {
        case string(String)
        case object([String: LooseValue])
        case other
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let o = try? c.decode([String: LooseValue].self) {
                self = .object(o)
            } else {
                self = .other
            }
        }
    }
}

/// The frozen test PKI of `Fixtures/test-pki` (made once by `Fixtures/test-pki/make_test_fixtures.py`, never regenerated); new
/// chains are built in code with ``TestCA``.
public enum TestPKI {
    public static func der(_ name: String) throws -> [UInt8] { try Fixtures.bytes("test-pki/\(name).der") }
    public static func key(_ name: String) throws -> PrivateKey {
        try PrivateKey(pem: try Fixtures.text("test-pki/\(name).key.pem"))
    }

    /// The verifier setup the synthetic fixtures assume: the test root pinned as if it were Apple's root.
    public static func anchorsAsApple() throws -> TrustAnchors { try TrustAnchors(appleRoots: [try der("root")]) }

    /// The apps the synthetic fixtures assume.
    public static let apps: [V2App] = [
        V2App(bundleID: "com.example.gateway", appAppleID: 1_234_567_890, environments: [.production, .sandbox]),
        V2App(bundleID: "com.example.prodonly", appAppleID: 2_222_222_222, environments: [.production]),
    ]

    /// 2025-11-24: after every fixture's signedDate; used as "now" so tests never read the clock.
    public static let now: Int64 = 1_764_000_000_000
}
