import Canonical
import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter

/// The simulator's PKI: what it writes, that it is generated once, and that it is Apple-shaped yet honoured by the
/// real V2 verifier for sandbox payloads only.
@Suite struct SimulatorPKITests {
    static let files = [
        "root.der", "root.pem", "intermediate.der", "leaf.der", "leaf.key.pem", "api-key.p8", "api-key.pub.der",
        "asc-key.p8",
        "asc-key.pub.der",
    ]

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try #require(FileManager.default.contents(atPath: path)))
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let value = try #require(attributes[.posixPermissions])
        if let n = value as? Int { return n & 0o777 }
        return try #require(value as? NSNumber).intValue & 0o777
    }

    @Test func loadOrCreateWritesEveryFile() throws {
        try Sim.withPKI { pki throws in
            for name in Self.files {
                #expect(FileManager.default.fileExists(atPath: pki.folder + "/" + name), "\(name) written")
            }
            #expect(try Self.bytes(pki.folder + "/root.der") == pki.root.der)
            #expect(try Self.bytes(pki.folder + "/intermediate.der") == pki.intermediate.der)
            #expect(try Self.bytes(pki.folder + "/leaf.der") == pki.leaf.der)
            let p8 = String(decoding: try Self.bytes(pki.folder + "/api-key.p8"), as: UTF8.self)
            #expect(p8.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            #expect(p8 == pki.apiKeyPEM)
            let leafKey = String(decoding: try Self.bytes(pki.folder + "/leaf.key.pem"), as: UTF8.self)
            #expect(leafKey.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            #expect(try Self.bytes(pki.folder + "/api-key.pub.der") == pki.apiKey.publicKey.subjectPublicKeyInfo)
            let rootPEM = String(decoding: try Self.bytes(pki.folder + "/root.pem"), as: UTF8.self)
            #expect(try X509Certificate(pem: rootPEM).der == pki.root.der)
            #expect(pki.apiKey.publicKey.isP256)
            // The App Store Connect team key: its own P-256 key, not the In-App Purchase key.
            let asc = String(decoding: try Self.bytes(pki.folder + "/asc-key.p8"), as: UTF8.self)
            #expect(asc.hasPrefix("-----BEGIN PRIVATE KEY-----") && asc == pki.ascKeyPEM)
            #expect(try Self.bytes(pki.folder + "/asc-key.pub.der") == pki.ascKey.publicKey.subjectPublicKeyInfo)
            #expect(pki.ascKey.publicKey.isP256)
            #expect(pki.ascKey.publicKey.subjectPublicKeyInfo != pki.apiKey.publicKey.subjectPublicKeyInfo)
            #expect(SimulatorPKI.ascKeyID != SimulatorPKI.apiKeyID)
        }
    }

    @Test func aFolderMadeBeforeTheAppStoreConnectKeyGetsOneAndKeepsTheRest() throws {
        try Sim.withPKI { first throws in
            for name in ["asc-key.p8", "asc-key.pub.der"] {
                try FileManager.default.removeItem(atPath: first.folder + "/" + name)
            }
            #expect(throws: SimulatorError.self) { try SimulatorPKI.load(folder: first.folder) }
            let second = try SimulatorPKI.loadOrCreate(folder: first.folder, now: Sim.t0)
            #expect(second.root.der == first.root.der && second.apiKeyPEM == first.apiKeyPEM)
            #expect(second.ascKeyPEM != first.ascKeyPEM, "a new key")
            #expect(try Self.mode(first.folder + "/asc-key.p8") == 0o600)
            #expect(try SimulatorPKI.load(folder: first.folder).ascKeyPEM == second.ascKeyPEM)
        }
    }

    @Test func secretFilesAreOwnerOnly() throws {
        try Sim.withPKI { pki throws in
            #expect(try Self.mode(pki.folder + "/leaf.key.pem") == 0o600)
            #expect(try Self.mode(pki.folder + "/api-key.p8") == 0o600)
            #expect(try Self.mode(pki.folder + "/asc-key.p8") == 0o600)
        }
    }

    @Test func secondLoadOrCreateKeepsTheSamePKI() throws {
        try Sim.withPKI { first throws in
            // A later command (a later clock) loads what is there rather than generating again.
            let second = try SimulatorPKI.loadOrCreate(folder: first.folder, now: Sim.t0 + 400 * 86_400_000)
            #expect(second.root.der == first.root.der)
            #expect(second.intermediate.der == first.intermediate.der)
            #expect(second.leaf.der == first.leaf.der)
            #expect(second.apiKeyPEM == first.apiKeyPEM)
            #expect(second.ascKeyPEM == first.ascKeyPEM)
            #expect(second.signer.headerSegment == first.signer.headerSegment)
            #expect(try Self.bytes(first.folder + "/root.der") == first.root.der)
            let loaded = try SimulatorPKI.load(folder: first.folder)
            #expect(loaded.root.der == first.root.der)
            #expect(loaded.leafKey.publicKey.subjectPublicKeyInfo == first.leafKey.publicKey.subjectPublicKeyInfo)
        }
    }

    @Test func twoFoldersGetDifferentPKIs() throws {
        try Sim.withPKI { a throws in
            try Sim.withPKI { b throws in
                #expect(a.root.der != b.root.der)
                #expect(a.apiKeyPEM != b.apiKeyPEM)
            }
        }
    }

    @Test func loadOfAnEmptyFolderThrowsPKIMissing() throws {
        let folder = try Scratch.directory("simtests")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let error = #expect(throws: SimulatorError.self) { try SimulatorPKI.load(folder: folder) }
        #expect(error?.code == "pki_missing")
        #expect(error?.reason.contains("root.der") == true)
        let absent = #expect(throws: SimulatorError.self) { try SimulatorPKI.load(folder: folder + "/nope") }
        #expect(absent?.code == "pki_missing")
    }

    @Test func loadNamesTheMissingFile() throws {
        try Sim.withPKI { pki throws in
            try FileManager.default.removeItem(atPath: pki.folder + "/api-key.p8")
            let error = #expect(throws: SimulatorError.self) { try SimulatorPKI.load(folder: pki.folder) }
            #expect(error?.code == "pki_missing")
            #expect(error?.reason.contains("api-key.p8") == true)
        }
    }

    @Test func certificatesAreAppleShaped() throws {
        try Sim.withPKI { pki throws in
            let seconds = Sim.t0 / 1000
            for cert in [pki.root, pki.intermediate, pki.leaf] {
                #expect(cert.notBefore == seconds - 86_400, "valid from the day before")
                #expect(cert.notAfter == seconds + 10 * 365 * 86_400, "for ten years")
            }
            #expect(pki.root.isCA)
            #expect(pki.intermediate.isCA)
            #expect(!pki.leaf.isCA)
            #expect(pki.root.subject == pki.root.issuer, "self-signed root")
            #expect(pki.intermediate.issuer == pki.root.subject)
            #expect(pki.leaf.issuer == pki.intermediate.subject)
            #expect(pki.leaf.hasExtension(oid: AppleJWSVerifier.leafMarkerOID))
            #expect(pki.intermediate.hasExtension(oid: AppleJWSVerifier.intermediateMarkerOID))
            #expect(try pki.leaf.publicKey().isP256)
            #expect(pki.root.der != TrustAnchors.appleRootCAG3, "never Apple's root")
            // The signer's x5c is leaf, intermediate, root (standard base64).
            let x5c = try #require(try Sim.header(try pki.signer.sign(payload: Array("{}".utf8)))["x5c"] as? [String])
            #expect(x5c == [pki.leaf, pki.intermediate, pki.root].map { Base64.encode($0.der, alphabet: .standard) })
        }
    }

    // MARK: through the real V2 verifier

    static func testNotification(
        _ pki: SimulatorPKI,
        at time: Int64 = Sim.t0,
        environment: String = "Sandbox"
    ) throws -> [UInt8] {
        Array(
            try Emitter(pki: pki).notification(
                type: "TEST",
                subtype: nil,
                uuid: "00000000-0000-4000-8000-000000000001",
                subscription: nil,
                transaction: nil,
                at: time
            ) { $0.environment = environment }.utf8
        )
    }

    @Test func sandboxNotificationVerifiesWithTheSimRootAsAnExtraRoot() throws {
        try Sim.withPKI { pki throws in
            let adapter = try Sim.adapter(sandboxRoots: [pki.root.der])
            let verified = try adapter.verifyNotification(signedPayload: try Self.testNotification(pki), now: Sim.t0)
            #expect(verified.environment == .sandbox)
            #expect(verified.bundleID == Catalogue.bundleID)
            #expect(verified.leafSerial == pki.leaf.serialNumberHex)
            #expect(verified.canonicalEvents().first?.kind == .test)
            // The configured gateway view accepts it as well.
            #expect(
                try Sim.adapter(trusting: pki).verifyNotification(
                    signedPayload: try Self.testNotification(pki),
                    now: Sim.t0
                ).bundleID
                    == Sim.bundleID
            )
        }
    }

    @Test func productionPayloadSignedByTheSimulatorIsRefused() throws {
        try Sim.withPKI { pki throws in
            let production = try Self.testNotification(pki, environment: "Production")
            let adapter = try Sim.adapter(sandboxRoots: [pki.root.der])
            #expect(
                Sim.v2Code { _ = try adapter.verifyNotification(signedPayload: production, now: Sim.t0) }
                    == "untrusted_root"
            )
            // The refusal is about the root's standing: pinned like Apple's, the same token passes.
            let asApple = try Sim.adapter(sandboxRoots: [], appleRoots: [pki.root.der])
            #expect(try asApple.verifyNotification(signedPayload: production, now: Sim.t0).environment == .production)
        }
    }

    @Test func withoutTheExtraRootEverythingIsRefused() throws {
        try Sim.withPKI { pki throws in
            let appleOnly = try Sim.adapter(sandboxRoots: [])
            for environment in ["Sandbox", "Production"] {
                let token = try Self.testNotification(pki, environment: environment)
                #expect(
                    Sim.v2Code { _ = try appleOnly.verifyNotification(signedPayload: token, now: Sim.t0) }
                        == "untrusted_root"
                )
            }
            // Another simulator's root does not vouch for this one's tokens either.
            try Sim.withPKI { other throws in
                let adapter = try Sim.adapter(sandboxRoots: [other.root.der])
                #expect(
                    Sim.v2Code {
                        _ = try adapter.verifyNotification(signedPayload: try Self.testNotification(pki), now: Sim.t0)
                    }
                        == "untrusted_root"
                )
            }
        }
    }

    @Test func tokensSignedOutsideTheValidityWindowAreRefused() throws {
        try Sim.withPKI { pki throws in
            let adapter = try Sim.adapter(sandboxRoots: [pki.root.der])
            let before = try Self.testNotification(pki, at: Sim.t0 - 2 * 86_400_000)
            #expect(
                Sim.v2Code { _ = try adapter.verifyNotification(signedPayload: before, now: Sim.t0) }
                    == "certificate_expired"
            )
            let late = try Self.testNotification(pki, at: Sim.t0 + 11 * 365 * 86_400_000)
            #expect(
                Sim.v2Code { _ = try adapter.verifyNotification(signedPayload: late, now: Sim.t0) }
                    == "certificate_expired"
            )
        }
    }
}
