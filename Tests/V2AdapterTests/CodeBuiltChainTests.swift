import Canonical
import Crypto
import TestSupport
import Testing
import V2Adapter

/// The V2 chain and token policy pinned a second time, by cases built in code. Each case re-creates one frozen
/// negative of `Fixtures/v2-synthetic/negative` with ``TestCA`` (certificates through `CertificateBuilder`) and
/// ``TestSigner`` / ``TestNotification`` (tokens through `AppleJWSSigner` where Apple's header is wanted), and must
/// fail with the failure written in Swift here — which must also be what the frozen `.expected.json` says. New
/// certificate and token cases are written like these; the frozen files are never regenerated.
@Suite struct CodeBuiltChainTests {
    /// `ca`'s root is pinned as if it were Apple's; `other` is a look-alike CA (same names, other keys) never pinned.
    struct Kit {
        let ca: TestCA
        let other: TestCA
        /// Apple's header for `ca`'s clean chain.
        let signer: TestSigner

        init() throws {
            (ca, other) = (try TestCA(), try TestCA())
            signer = try ca.chain.signer()
        }

        /// The negatives' base notification (DID_RENEW with nested tokens by `signer`), the outer token signed by `outer`.
        func didRenew(signedBy outer: TestSigner) throws -> String {
            try TestNotification.didRenew().signed(by: outer, nestedSigner: signer)
        }
    }

    /// One re-created negative: the frozen file it mirrors, the failure both must come to, how to build the token.
    struct Case: Sendable, CustomTestStringConvertible {
        let frozen: String
        let expected: V2Failure
        let build: @Sendable (Kit) throws -> String

        init(
            _ frozen: String,
            _ code: String,
            cause: String? = nil,
            _ build: @escaping @Sendable (Kit) throws -> String
        ) {
            (self.frozen, self.expected, self.build) = (frozen, V2Failure(code, cause: cause), build)
        }

        var testDescription: String { frozen }
    }

    /// Frozen negatives without a case here, and why.
    static let notRecreated: [String: String] = [
        "body-not-json": "request-body level (malformed_body): decided by the gateway's body parser before any JWS",
        "body-unknown-version": "request-body level (unknown_version), no JWS",
        "signedpayload-not-string": "request-body level (malformed_body), no JWS",
        "alg-rs256":
            "needs an RSA key; the Crypto module has EC keys only (alg-none/-hs256/-es256-lowercase pin the alg rule)",
    ]

    // MARK: the cases

    static let certificateCases: [Case] = [
        Case("leaf-expired-at-signeddate", "certificate_expired") { k in
            try k.didRenew(signedBy: k.ca.chain(.expiredLeaf).signer())
        },
        Case("leaf-missing-marker", "missing_apple_marker") { k in
            try k.didRenew(signedBy: k.ca.chain(.leafWithoutMarker).signer())
        },
        Case("intermediate-missing-marker", "missing_apple_marker") { k in
            try k.didRenew(signedBy: k.ca.chain(.intermediateWithoutMarker).signer())
        },
        Case("intermediate-not-ca", "invalid_certificate") { k in
            try k.didRenew(signedBy: k.ca.chain(.intermediateNotCA).signer())
        },
        Case("leaf-is-ca", "invalid_certificate") { k in try k.didRenew(signedBy: k.ca.chain(.leafIsCA).signer()) },
        Case("leaf-p384-key", "invalid_certificate") { k in try k.didRenew(signedBy: k.ca.chain(.p384Leaf).signer()) },
        // Look-alike intermediate (same names as ca's) under the pinned root's bytes: its signature is not the root's.
        Case("chain-to-other-root", "untrusted_root") { k in
            let o = k.other.chain
            return try k.didRenew(
                signedBy: TestSigner(x5c: [o.leaf.der, o.intermediate.der, k.ca.root.der], key: o.leafKey)
            )
        },
        Case("x5c-root-not-pinned", "untrusted_root") { k in
            let c = k.ca.chain
            return try k.didRenew(
                signedBy: TestSigner(x5c: [c.leaf.der, c.intermediate.der, k.other.root.der], key: c.leafKey)
            )
        },
        Case("x5c-one-cert", "invalid_chain_length") { k in try k.didRenew(signedBy: k.x5c { [$0[0]] }) },
        Case("x5c-two-certs", "invalid_chain_length") { k in try k.didRenew(signedBy: k.x5c { [$0[0], $0[1]] }) },
        Case("x5c-four-certs", "invalid_chain_length") { k in try k.didRenew(signedBy: k.x5c { $0 + [$0[2]] }) },
        Case("x5c-garbage-der", "invalid_certificate") { k in
            // 512 bytes that are not DER (first byte 0x5a is not even a SEQUENCE tag), fixed by a hash chain.
            var garbage: [UInt8] = []
            while garbage.count < 512 {
                garbage += SHA256.hash(Array("x5c-garbage-der".utf8) + [UInt8(garbage.count / 32)])
            }
            garbage[0] = 0x5A
            return try k.didRenew(signedBy: k.x5c { [garbage, $0[1], $0[2]] })
        },
        Case("x5c-base64url", "invalid_certificate") { k in
            // Standard base64 with '-' and '_' for '+' and '/' (padding kept); x5c must be standard base64.
            let x5c = k.ca.chain.x5c.map {
                "\"" + Base64.encode($0, alphabet: .standard).replacing("+", with: "-").replacing("/", with: "_") + "\""
            }
            let header = "{\"alg\":\"ES256\",\"x5c\":[\(x5c.joined(separator: ","))]}"
            return try k.didRenew(signedBy: TestSigner(headerJSON: header, key: k.ca.chain.leafKey))
        },
    ]

    static let signatureCases: [Case] = [
        Case("alg-es256-lowercase", "unsupported_algorithm") { k in
            try k.didRenew(signedBy: TestSigner(alg: "es256", x5c: k.ca.chain.x5c, key: k.ca.chain.leafKey))
        },
        Case("alg-none", "unsupported_algorithm") { k in
            let unsigned = try TestSigner(alg: "none", x5c: k.ca.chain.x5c, key: k.ca.chain.leafKey).sign(k.payload())
            return TestJWS.segments(unsigned).prefix(2).joined(separator: ".") + "."
        },
        Case("alg-hs256", "unsupported_algorithm") { k in
            // Algorithm confusion: HMAC keyed with the leaf's public key (PEM), which any attacker has.
            let hs256 = TestSigner(alg: "HS256", x5c: k.ca.chain.x5c, key: k.ca.chain.leafKey)
            let input = hs256.headerSegment + "." + TestSigner.segment(try k.payload())
            let pem =
                "-----BEGIN PUBLIC KEY-----\n"
                + Base64.encode(k.ca.chain.leafKey.publicKey.subjectPublicKeyInfo, alphabet: .standard)
                + "\n-----END PUBLIC KEY-----\n"
            let mac = HMACSHA256.authenticationCode(key: Array(pem.utf8), message: Array(input.utf8))
            return input + "." + Base64.encode(mac, alphabet: .url)
        },
        Case("tampered-payload", "bad_signature") { k in
            let genuine = try TestNotification.didRenew().signed(by: k.signer)
            var changed = TestNotification.didRenew()
            changed.status = 2
            return TestJWS.replacingPayload(of: genuine, with: try changed.payloadJSON(nestedSignedBy: k.signer))
        },
        Case("der-signature", "bad_signature") { k in
            let input = k.signer.headerSegment + "." + TestSigner.segment(try k.payload())
            return input + "." + Base64.encode(try k.ca.chain.leafKey.signDER(Array(input.utf8)), alphabet: .url)
        },
        // A valid signature whose r starts with 0x00, written as r without that byte (31) ‖ s (32): 63 bytes.
        Case("signature-wrong-length", "bad_signature") { k in
            let input = k.signer.headerSegment + "." + TestSigner.segment(try k.payload())
            for _ in 0..<10_000 {
                let raw = try k.ca.chain.leafKey.signES256(Array(input.utf8))
                if raw[0] == 0 { return input + "." + Base64.encode(raw.dropFirst(), alphabet: .url) }
            }
            throw FixtureError(description: "no signature with a leading zero byte in 10,000 tries")
        },
    ]

    static let nestedCases: [Case] = [
        Case("nested-transaction-other-key", "nested_jws_invalid", cause: "bad_signature") { k in
            // The clean chain's header, but signed by the other CA's leaf key.
            let impostor = TestSigner(x5c: k.ca.chain.x5c, key: k.other.chain.leafKey)
            let n = TestNotification.didRenew()
            return try n.signed(by: k.signer, transactionToken: try impostor.sign(try #require(n.transaction).json))
        },
        Case("nested-renewal-tampered", "nested_jws_invalid", cause: "bad_signature") { k in
            let n = TestNotification.didRenew()
            var changed = try #require(n.renewalInfo)
            let genuine = try k.signer.sign(changed.json)
            changed.autoRenewStatus = 0
            return try n.signed(by: k.signer, renewalToken: TestJWS.replacingPayload(of: genuine, with: changed.json))
        },
        Case("nested-renewal-two-segments", "nested_jws_invalid", cause: "malformed") { k in
            let n = TestNotification.didRenew()
            let genuine = try k.signer.sign(try #require(n.renewalInfo).json)
            return try n.signed(by: k.signer, renewalToken: TestJWS.segments(genuine).prefix(2).joined(separator: "."))
        },
        Case("nested-transaction-bad-base64", "nested_jws_invalid", cause: "malformed") { k in
            let n = TestNotification.didRenew()
            let broken = Self.inserting("*", at: 40, in: TestSigner.segment(try #require(n.transaction).json))
            return try n.signed(by: k.signer, transactionToken: try k.signer.sign(payloadSegment: broken))
        },
        Case("nested-transaction-not-json", "nested_jws_invalid", cause: "malformed") { k in
            try TestNotification.didRenew().signed(
                by: k.signer,
                transactionToken: try k.signer.sign("{\"transactionId\":\"2000000")
            )
        },
        Case("nested-transaction-wrong-bundle", "nested_jws_invalid", cause: "unknown_bundle") { k in
            var n = TestNotification.didRenew()
            n.transaction?.bundleID = "com.example.other"
            return try n.signed(by: k.signer)
        },
        // com.example.gateway allows Production: only comparing with the notification's environment catches this.
        Case("nested-transaction-wrong-environment", "nested_jws_invalid", cause: "environment_mismatch") { k in
            var n = TestNotification.didRenew()
            n.transaction?.environment = "Production"
            return try n.signed(by: k.signer)
        },
    ]

    static let appCases: [Case] = [
        Case("wrong-bundle", "unknown_bundle") { k in
            try k.signer.sign(TestNotification.test(bundleID: "com.example.unknown").payloadJSON())
        },
        Case("wrong-environment", "environment_mismatch") { k in
            try k.signer.sign(
                TestNotification.test(bundleID: "com.example.prodonly", environment: "Sandbox").payloadJSON()
            )
        },
        Case("wrong-app-apple-id-production", "app_apple_id_mismatch") { k in
            var n = TestNotification.didRenew(environment: "Production")
            n.appAppleID = 999
            return try n.signed(by: k.signer)
        },
        Case("production-missing-app-apple-id", "app_apple_id_mismatch") { k in
            var n = TestNotification.didRenew(environment: "Production")
            n.appAppleID = nil
            return try n.signed(by: k.signer)
        },
        Case("external-token-production-wrong-app-apple-id", "app_apple_id_mismatch") { k in
            // No SANDBOX prefix on externalPurchaseId: Production, which requires appAppleId 1234567890.
            try k.signer.sign(
                """
                {"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"CREATED","notificationUUID":"00000000-0000-4000-8000-00000000e001",\
                "externalPurchaseToken":{"externalPurchaseId":"6f1e3c55-7f9b-4d2a-9a51-0e4a5c1b2d3e","tokenCreationDate":1748735940000,\
                "appAppleId":999,"bundleId":"com.example.gateway"},"version":"2.0","signedDate":1748736000000}
                """
            )
        },
        Case("local-testing-environment", "unsupported_environment") { k in
            try k.signer.sign(TestNotification.test(environment: "LocalTesting").payloadJSON())
        },
        // StoreKit Testing in Xcode: one self-signed certificate, kid Apple_Xcode_Key; refused for what it claims to be.
        Case("xcode-environment", "unsupported_environment") { k in
            let key = try PrivateKey.generateP256()
            let name = CertificateSubject(
                commonName: "StoreKit Testing in Xcode",
                organization: "StoreKit Testing in Xcode"
            )
            let cert = try CertificateBuilder.make(
                subject: name,
                issuer: nil,
                key: key,
                notBefore: 1_748_649_600,
                notAfter: 1_780_185_600,
                isCA: false
            )
            let x5c = Base64.encode(cert.der, alphabet: .standard)
            let xcode = TestSigner(
                headerJSON: "{\"alg\":\"ES256\",\"kid\":\"Apple_Xcode_Key\",\"typ\":\"JWT\",\"x5c\":[\"\(x5c)\"]}",
                key: key
            )
            var n = TestNotification.didRenew(environment: "Xcode")
            (n.notificationType, n.subtype, n.appAppleID) = ("SUBSCRIBED", "INITIAL_BUY", nil)
            return try n.signed(by: xcode)
        },
    ]

    static let structureCases: [Case] = [
        Case("jws-two-segments", "malformed") { k in
            TestJWS.segments(try k.didRenew(signedBy: k.signer)).prefix(2).joined(separator: ".")
        },
        Case("jws-four-segments", "malformed") { k in
            try k.didRenew(signedBy: k.signer) + "." + TestSigner.segment("extra")
        },
        Case("header-bad-base64", "malformed") { k in
            let broken = Self.inserting("*", at: 20, in: k.signer.headerSegment)
            return try k.signer.sign(headerSegment: broken, payloadSegment: TestSigner.segment(try k.payload()))
        },
        Case("header-not-json", "malformed") { k in
            try k.signer.sign(
                headerSegment: TestSigner.segment("{not json"),
                payloadSegment: TestSigner.segment(try k.payload())
            )
        },
        Case("header-missing-x5c", "malformed") { k in
            try k.didRenew(signedBy: TestSigner(headerJSON: "{\"alg\":\"ES256\"}", key: k.ca.chain.leafKey))
        },
        Case("payload-bad-base64", "malformed") { k in
            try k.signer.sign(payloadSegment: Self.inserting("*", at: 40, in: TestSigner.segment(try k.payload())))
        },
        Case("payload-not-json", "malformed") { k in try k.signer.sign("[1,2") },
        Case("payload-not-object", "malformed") { k in try k.signer.sign("[]") },
        Case("signature-bad-base64", "malformed") { k in
            var parts = TestJWS.segments(try k.didRenew(signedBy: k.signer))
            parts[2] = Self.inserting("*", at: 10, in: parts[2])
            return parts.joined(separator: ".")
        },
        Case("data-and-summary-both", "malformed") { k in
            try k.signer.sign(
                """
                {"notificationType":"DID_RENEW","notificationUUID":"00000000-0000-4000-8000-00000000e002","data":{"appAppleId":1234567890,\
                "bundleId":"com.example.gateway","environment":"Sandbox","status":1},"summary":{"requestIdentifier":\
                "00000000-0000-4000-8000-00000000e003","environment":"Sandbox","appAppleId":1234567890,"bundleId":"com.example.gateway",\
                "productId":"com.example.gateway.monthly","storefrontCountryCodes":["USA"],"succeededCount":1,"failedCount":0},\
                "version":"2.0","signedDate":1748736000000}
                """
            )
        },
        Case("no-data-summary-or-token", "malformed") { k in
            try k.signer.sign(
                """
                {"notificationType":"TEST","notificationUUID":"00000000-0000-4000-8000-00000000e004","version":"2.0",\
                "signedDate":1748736000000}
                """
            )
        },
        Case("data-not-object", "malformed") { k in
            try k.signer.sign(
                """
                {"notificationType":"TEST","notificationUUID":"00000000-0000-4000-8000-00000000e005","data":"x","version":"2.0",\
                "signedDate":1748736000000}
                """
            )
        },
    ]

    static let cases = certificateCases + signatureCases + nestedCases + appCases + structureCases

    static func inserting(_ s: String, at offset: Int, in text: String) -> String {
        String(text.prefix(offset)) + s + String(text.dropFirst(offset))
    }

    // MARK: tests

    @Test(arguments: cases)
    func codeBuiltCaseFailsAsItsFrozenVectorSays(_ c: Case) throws {
        let frozen = try #require(try V2Failure.expected("v2-synthetic/negative/\(c.frozen).expected.json"))
        #expect(frozen == c.expected, "the frozen vector expects \(frozen)")
        let kit = try Kit()
        let actual = try kit.ca.failure(verifying: try c.build(kit))
        #expect(actual == c.expected)
    }

    /// Every frozen negative has a case here or a reason in ``notRecreated``, and no case is there twice.
    @Test func everyFrozenNegativeIsRecreatedOrSaidNotToBe() {
        let frozen = Set(Fixtures.names(in: "v2-synthetic/negative").map { String($0.dropLast(".json".count)) })
        let recreated = Self.cases.map(\.frozen)
        #expect(Set(recreated).count == recreated.count)
        #expect(Set(recreated).union(Self.notRecreated.keys) == frozen)
        #expect(Set(recreated).isDisjoint(with: Self.notRecreated.keys))
    }

    /// The bases the negatives change one thing in verify, so each negative fails for its own defect: the CA's chain
    /// and a chain issued by ``TestCA/chain(_:)`` without defect, DID_RENEW in both environments with nested tokens,
    /// TEST notifications for both apps, and the other CA's chain under its own root.
    @Test func theNegativesBasesVerify() throws {
        let kit = try Kit()
        for chain in [kit.ca.chain, try kit.ca.chain(.clean)] {
            let verified = try kit.ca.adapter().verifyNotification(
                signedPayload: Array(try TestNotification.didRenew().signed(by: chain.signer()).utf8),
                now: TestPKI.now
            )
            #expect(verified.leafSerial == chain.leaf.serialNumberHex)
            #expect(verified.signedTime == TestCA.signedDate)
            #expect(verified.bundleID == "com.example.gateway" && verified.environment == .sandbox)
            #expect(verified.transaction?.transactionID == "2000000900101004")
            #expect(verified.transaction?.environment == "Sandbox")
            #expect(verified.renewalInfo?.autoRenewStatus == 1)
            #expect(verified.canonicalEvents().map(\.kind) == [.renewal])
        }
        var production = TestNotification.test(bundleID: "com.example.prodonly", environment: "Production")
        production.appAppleID = 2_222_222_222
        for token in [
            try TestNotification.didRenew(environment: "Production").signed(by: kit.signer),
            try kit.signer.sign(TestNotification.test().payloadJSON()),
            try kit.signer.sign(production.payloadJSON()),
        ] {
            #expect(try kit.ca.failure(verifying: token) == nil)
        }
        let otherToken = try TestNotification.didRenew().signed(by: kit.other.chain.signer())
        #expect(try kit.other.failure(verifying: otherToken) == nil)
        #expect(try kit.ca.failure(verifying: otherToken) == V2Failure("untrusted_root"))
    }

    /// The code-built chains have the frozen `test-pki`'s shape: what each profile changes, and only that.
    @Test func profilesChangeOnlyWhatTheyName() throws {
        let ca = try TestCA()
        let clean = try ca.chain(.clean)
        #expect(clean.intermediate.isCA && !clean.leaf.isCA)
        #expect(clean.intermediate.hasExtension(oid: AppleJWSVerifier.intermediateMarkerOID))
        #expect(clean.leaf.hasExtension(oid: AppleJWSVerifier.leafMarkerOID))
        #expect(try clean.leaf.publicKey().isP256)
        #expect(
            clean.leaf.subject == ca.chain.leaf.subject && clean.intermediate.subject == ca.chain.intermediate.subject
        )
        #expect(clean.leaf.notAfter == TestCA.notAfter)

        #expect(try ca.chain(.expiredLeaf).leaf.notAfter == 1_609_459_200)
        #expect(try !ca.chain(.leafWithoutMarker).leaf.hasExtension(oid: AppleJWSVerifier.leafMarkerOID))
        #expect(
            try !ca.chain(.intermediateWithoutMarker).intermediate.hasExtension(
                oid: AppleJWSVerifier.intermediateMarkerOID
            )
        )
        #expect(try !ca.chain(.intermediateNotCA).intermediate.isCA)
        #expect(try ca.chain(.leafIsCA).leaf.isCA)
        #expect(try ca.chain(.p384Leaf).leaf.publicKey().curveName == "secp384r1")
        let other = try TestCA()
        #expect(other.root.subject == ca.root.subject && other.root.der != ca.root.der)
    }
}

extension CodeBuiltChainTests.Kit {
    /// The base DID_RENEW payload with its nested tokens signed by `signer`.
    func payload() throws -> String { try TestNotification.didRenew().payloadJSON(nestedSignedBy: signer) }

    /// `signer`'s key under a header whose x5c is `edit` applied to the clean chain's.
    func x5c(_ edit: ([[UInt8]]) -> [[UInt8]]) -> TestSigner {
        TestSigner(x5c: edit(ca.chain.x5c), key: ca.chain.leafKey)
    }
}
