import Canonical
import Crypto
import TestPKI
import TestSupport
import Testing
import V2Adapter

/// Tokens signed at run time by ``AppleJWSSigner`` with a freshly generated Apple-shaped PKI go through the real
/// verifier exactly like the committed fixtures (and like Apple's own tokens).
@Suite struct JWSSignerTests {
    /// 2024-01-01 … 2030-01-01 (seconds); the tokens are signed 2025-06-01 (ms).
    static let notBefore: Int64 = 1_704_067_200
    static let notAfter: Int64 = 1_893_456_000
    static let signedDate: Int64 = 1_748_736_000_000

    static func signer(_ pki: GeneratedTestPKI) throws -> AppleJWSSigner {
        try AppleJWSSigner(leaf: pki.leaf, intermediate: pki.intermediate, root: pki.root, leafKey: pki.leafKey)
    }

    /// A minimal TEST notification (the shape of `TestJWS.testNotification`).
    static func testNotification(
        environment: String = "Sandbox",
        uuid: String = "00000000-0000-4000-8000-000000000001"
    ) -> [UInt8] {
        Array(
            """
            {"notificationType":"TEST","notificationUUID":"\(uuid)","data":{"bundleId":"com.example.gateway",\
            "environment":"\(environment)"},"version":"2.0","signedDate":\(signedDate)}
            """.utf8
        )
    }

    static func adapter(_ anchors: TrustAnchors) -> V2Adapter {
        V2Adapter(verifier: AppleJWSVerifier(anchors: anchors), apps: nil)
    }

    /// The stable code a verification fails with, nil when it succeeds.
    static func code(_ adapter: V2Adapter, _ token: String) -> String? {
        do {
            _ = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: signedDate)
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    static func segments(_ token: String) -> [Substring] {
        token.split(separator: ".", omittingEmptySubsequences: false)
    }

    @Test func tokenVerifiesWhenTheGeneratedRootIsPinnedLikeApples() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        let token = try Self.signer(pki).sign(payload: Self.testNotification())
        let adapter = Self.adapter(try TrustAnchors(appleRoots: [pki.root.der]))
        let verified = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: Self.signedDate)
        #expect(verified.payload.notificationType == "TEST")
        #expect(verified.bundleID == "com.example.gateway")
        #expect(verified.environment == .sandbox)
        #expect(verified.leafSerial == pki.leaf.serialNumberHex)
        #expect(verified.signedTime == Self.signedDate)
    }

    @Test func extraSandboxRootVouchesForSandboxButNotForProductionPayloads() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        let signer = try Self.signer(pki)
        let adapter = Self.adapter(try TrustAnchors.apple(extraSandboxRoots: [pki.root.der]))
        #expect(Self.code(adapter, try signer.sign(payload: Self.testNotification(environment: "Sandbox"))) == nil)
        #expect(
            Self.code(adapter, try signer.sign(payload: Self.testNotification(environment: "Production")))
                == "untrusted_root"
        )
        // Apple's root alone knows nothing of the generated chain.
        let appleOnly = Self.adapter(try TrustAnchors.apple())
        #expect(Self.code(appleOnly, try signer.sign(payload: Self.testNotification())) == "untrusted_root")
    }

    @Test func headerIsAppleShapedAndIdenticalForEveryToken() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        let signer = try Self.signer(pki)
        let first = try signer.sign(payload: Self.testNotification(uuid: "00000000-0000-4000-8000-000000000001"))
        let second = try signer.sign(payload: Self.testNotification(uuid: "00000000-0000-4000-8000-000000000002"))
        #expect(Self.segments(first).count == 3)
        #expect(Self.segments(first)[0] == Self.segments(second)[0])
        #expect(Self.segments(first)[0] == Substring(signer.headerSegment))
        #expect(Self.segments(first)[1] != Self.segments(second)[1])

        let header = String(
            decoding: try Base64.decode(Array(signer.headerSegment.utf8), alphabet: .url),
            as: UTF8.self
        )
        let x5c = [pki.leaf, pki.intermediate, pki.root].map {
            "\"" + Base64.encode($0.der, alphabet: .standard) + "\""
        }
        #expect(header == "{\"alg\":\"ES256\",\"x5c\":[" + x5c.joined(separator: ",") + "]}")
        // Payload: the exact bytes, base64url unpadded; signature: raw 64-byte R‖S.
        #expect(try Base64.decode(Array(Self.segments(first)[1].utf8), alphabet: .url) == Self.testNotification())
        #expect(try Base64.decode(Array(Self.segments(first)[2].utf8), alphabet: .url).count == 64)
        #expect(!first.contains("="))

        // Identical header bytes are what the verifier's chain cache keys on: the second token is a hit.
        let verifier = AppleJWSVerifier(anchors: try TrustAnchors(appleRoots: [pki.root.der]))
        let adapter = V2Adapter(verifier: verifier, apps: nil)
        for token in [first, second] {
            _ = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: Self.signedDate)
        }
        #expect(verifier.chainCacheStatistics.misses == 1)
        #expect(verifier.chainCacheStatistics.hits == 1)
    }

    @Test func tamperingOnePayloadByteBreaksTheSignature() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        let uuid = Array("00000000-0000-4000-8000-000000000001".utf8)
        let payload = Self.testNotification(uuid: String(decoding: uuid, as: UTF8.self))
        let token = try Self.signer(pki).sign(payload: payload)
        // The uuid's last digit: the payload stays valid JSON with the same dates (a changed signedDate would be
        // judged by the chain's validity first).
        let start = try #require(
            (0...(payload.count - uuid.count)).first { payload[$0..<($0 + uuid.count)].elementsEqual(uuid) }
        )
        var tampered = payload
        tampered[start + uuid.count - 1] = UInt8(ascii: "2")
        let parts = Self.segments(token)
        let forged = parts[0] + "." + Base64.encode(tampered, alphabet: .url) + "." + parts[2]
        let adapter = Self.adapter(try TrustAnchors(appleRoots: [pki.root.der]))
        #expect(Self.code(adapter, String(forged)) == "bad_signature")
        #expect(Self.code(adapter, token) == nil)  // the untouched token still passes
    }

    @Test func signerRefusesAKeyThatIsNotTheLeafsP256Key() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        for key in [pki.intermediateKey, try PrivateKey.generateP256()] {
            #expect(throws: CryptoError(.invalidKey, "")) {
                _ = try AppleJWSSigner(leaf: pki.leaf, intermediate: pki.intermediate, root: pki.root, leafKey: key)
            }
        }
    }
}
