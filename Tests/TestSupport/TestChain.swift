public import Crypto
public import TestPKI
public import V2Adapter

/// An Apple-shaped test CA built in code, the way to write a new certificate or V2 token case (the files in
/// `Fixtures/test-pki` and `Fixtures/v2-synthetic` are frozen vectors; `Fixtures/test-pki/make_test_fixtures.py` is only the
/// record of how they were made). Its root, intermediate and normal leaf come from ``GeneratedTestPKI`` (the
/// simulator's PKI: the profile of Apple's chain and of the frozen `test-pki`); ``chain(_:)`` issues look-alike
/// chains under the same root with one defect each, through ``CertificateBuilder``.
///
/// ```swift
/// let ca = try TestCA()                                   // fresh keys, fixed dates (2020 → 2040)
/// let token = try TestNotification.didRenew().signed(by: ca.chain(.leafWithoutMarker).signer())
/// #expect(try ca.failure(verifying: token) == V2Failure("missing_apple_marker"))
/// ```
///
/// Keys are generated each time (cheap: EC), so no assertion may depend on key or certificate bytes; every date is
/// fixed and verification runs at an injected time, never the clock. A second `TestCA()` is an "other root": same
/// subject names, another key, never pinned.
public struct TestCA: Sendable {
    /// 2020-01-01T00:00:00Z (seconds): the root, the intermediate and normal leaves are valid from then…
    public static let notBefore: Int64 = 1_577_836_800
    /// …until 2040-01-01T00:00:00Z.
    public static let notAfter: Int64 = 2_208_988_800
    /// 2025-06-01T00:00:00Z (ms): the `signedDate` of every token (so the time the chain is validated at).
    public static let signedDate: Int64 = 1_748_736_000_000
    /// Subject names are `CN=iap-gateway Test Root CA | WWDR CA | Receipt Signing, OU=…, O=iap-gateway, C=US`.
    public static let name = "iap-gateway Test"

    public let pki: GeneratedTestPKI
    public var root: X509Certificate { pki.root }

    /// The CA's own clean chain (as ``GeneratedTestPKI`` made it).
    public var chain: TestChain {
        TestChain(leaf: pki.leaf, intermediate: pki.intermediate, root: pki.root, leafKey: pki.leafKey)
    }

    public init() throws {
        pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter, name: Self.name)
    }

    /// A new intermediate (fresh P-384 key) and leaf under this CA's root, shaped by `profile`: with ``TestChain/Profile/clean``
    /// exactly the profile of ``chain``; otherwise the same but for the defect(s) named. Subject names are the same as
    /// ``chain``'s (look-alikes: only keys, serials, SKI/AKI and the defect differ).
    ///
    /// ``CertificateBuilder`` ties keyUsage to the CA flag, so `intermediateIsCA: false` also gives the intermediate
    /// keyUsage digitalSignature and `leafIsCA: true` the leaf keyCertSign + cRLSign (the frozen `intermediate-not-ca`
    /// and `leaf-ca` kept the other keyUsage); the verifier judges the CA flag either way.
    public func chain(_ profile: TestChain.Profile) throws -> TestChain {
        let intermediateKey = try PrivateKey.generateP384()
        let intermediate = try CertificateBuilder.make(
            subject: Self.subject("WWDR CA"),
            issuer: (pki.root, pki.rootKey),
            key: intermediateKey,
            notBefore: Self.notBefore,
            notAfter: Self.notAfter,
            isCA: profile.intermediateIsCA,
            pathLength: profile.intermediateIsCA ? 0 : nil,
            extensions: profile.intermediateMarker ? [Self.marker(AppleJWSVerifier.intermediateMarkerOID)] : []
        )
        let leafKey = profile.leafCurve == .p384 ? try PrivateKey.generateP384() : try PrivateKey.generateP256()
        let validity = profile.leafValidity ?? Self.notBefore..<Self.notAfter
        let leaf = try CertificateBuilder.make(
            subject: Self.subject("Receipt Signing"),
            issuer: (intermediate, intermediateKey),
            key: leafKey,
            notBefore: validity.lowerBound,
            notAfter: validity.upperBound,
            isCA: profile.leafIsCA,
            extensions: profile.leafMarker ? [Self.marker(AppleJWSVerifier.leafMarkerOID)] : []
        )
        return TestChain(leaf: leaf, intermediate: intermediate, root: pki.root, leafKey: leafKey)
    }

    /// The verifier setup the synthetic fixtures assume, with this CA's root pinned as if it were Apple's (trusted
    /// for production and sandbox) and the fixtures' two apps (``TestPKI/apps``) unless others are given.
    public func adapter(apps: [V2App]? = TestPKI.apps) throws -> V2Adapter {
        V2Adapter(verifier: AppleJWSVerifier(anchors: try TrustAnchors(appleRoots: [root.der])), apps: apps)
    }

    /// How verifying `token` as a notification with ``adapter(apps:)`` fails (nil: it verifies), at `now` (ms; the
    /// chain is judged at the token's signedDate, `now` is only the fallback).
    public func failure(
        verifying token: String,
        apps: [V2App]? = TestPKI.apps,
        now: Int64 = TestPKI.now
    ) throws -> V2Failure? {
        let adapter = try adapter(apps: apps)
        return V2Failure.of { () throws(V2AdapterError) in
            _ = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: now)
        }
    }

    /// ``GeneratedTestPKI``'s subject for `role`, so issued certificates are look-alikes of the CA's own.
    static func subject(_ role: String) -> CertificateSubject {
        CertificateSubject(
            commonName: "\(name) \(role)",
            organizationalUnit: "\(name) test PKI (not Apple)",
            organization: "iap-gateway",
            country: "US"
        )
    }

    /// Apple's marker extensions: non-critical, value DER NULL.
    static func marker(_ oid: String) -> CertificateExtension {
        CertificateExtension(oid: oid, critical: false, derValue: [0x05, 0x00])
    }
}

/// Leaf, intermediate and root as a token's `x5c` names them, and the key that signs with the leaf (made by
/// ``TestCA``; any other x5c is ``TestSigner/init(alg:x5c:key:)``'s).
public struct TestChain: Sendable {
    public let leaf: X509Certificate
    public let intermediate: X509Certificate
    public let root: X509Certificate
    public let leafKey: PrivateKey

    /// `x5c` in Apple's order: leaf, intermediate, root (DER).
    public var x5c: [[UInt8]] { [leaf.der, intermediate.der, root.der] }

    /// Signs with Apple's header for this chain and the leaf's key.
    public func signer() throws -> TestSigner { try TestSigner(chain: self) }

    /// What ``TestCA/chain(_:)`` issues; each preset is one defect of the frozen `test-pki` variants.
    public struct Profile: Sendable {
        public enum Curve: Sendable { case p256, p384 }

        /// The leaf's validity in seconds since the epoch; nil: the CA's (2020 → 2040).
        public var leafValidity: Range<Int64>?
        /// The leaf carries 1.2.840.113635.100.6.11.1.
        public var leafMarker: Bool
        public var leafIsCA: Bool
        public var leafCurve: Curve
        /// The intermediate carries 1.2.840.113635.100.6.2.1.
        public var intermediateMarker: Bool
        public var intermediateIsCA: Bool

        public init(
            leafValidity: Range<Int64>? = nil,
            leafMarker: Bool = true,
            leafIsCA: Bool = false,
            leafCurve: Curve = .p256,
            intermediateMarker: Bool = true,
            intermediateIsCA: Bool = true
        ) {
            (self.leafValidity, self.leafMarker, self.leafIsCA, self.leafCurve) = (
                leafValidity, leafMarker, leafIsCA, leafCurve
            )
            (self.intermediateMarker, self.intermediateIsCA) = (intermediateMarker, intermediateIsCA)
        }

        /// Apple's profile, nothing wrong.
        public static let clean = Profile()
        /// Leaf valid 2020-01-01 → 2021-01-01: expired at every token's signedDate (frozen `leaf-expired`).
        public static let expiredLeaf = Profile(leafValidity: 1_577_836_800..<1_609_459_200)
        /// Frozen `leaf-no-marker`.
        public static let leafWithoutMarker = Profile(leafMarker: false)
        /// Frozen `intermediate-no-marker` (+ `leaf-under-intermediate-no-marker`).
        public static let intermediateWithoutMarker = Profile(intermediateMarker: false)
        /// Frozen `intermediate-not-ca` (+ `leaf-under-intermediate-not-ca`).
        public static let intermediateNotCA = Profile(intermediateIsCA: false)
        /// Frozen `leaf-ca`.
        public static let leafIsCA = Profile(leafIsCA: true)
        /// Frozen `leaf-p384`: ES256 needs a P-256 leaf.
        public static let p384Leaf = Profile(leafCurve: .p384)
    }
}

/// Signs compact JWS for tests. With Apple's header for a chain whose leaf is P-256 it is the project's own
/// ``AppleJWSSigner``; any other header (another `alg`, another x5c, a `kid`) or a P-384 leaf goes through
/// ``TestJWS``, which signs whatever it is given.
public struct TestSigner: Sendable {
    /// The base64url header segment of every token this signer makes.
    public let headerSegment: String
    public let key: PrivateKey
    private let apple: AppleJWSSigner?

    /// Apple's header `{"alg":"ES256","x5c":[leaf,intermediate,root]}` for `chain`, signed with its leaf key.
    public init(chain: TestChain) throws {
        if chain.leafKey.publicKey.isP256 {
            let apple = try AppleJWSSigner(
                leaf: chain.leaf,
                intermediate: chain.intermediate,
                root: chain.root,
                leafKey: chain.leafKey
            )
            (self.apple, headerSegment) = (apple, apple.headerSegment)
        } else {
            // AppleJWSSigner refuses a non-P-256 leaf (its tokens could never verify): the same header by hand.
            (apple, headerSegment) = (nil, Self.segment(TestJWS.header(certificates: chain.x5c)))
        }
        key = chain.leafKey
    }

    /// `{"alg":alg,"x5c":[…]}` with any certificates (DER), signed with `key`.
    public init(alg: String = "ES256", x5c: [[UInt8]], key: PrivateKey) {
        self.init(headerJSON: TestJWS.header(alg: alg, certificates: x5c), key: key)
    }

    /// Any header text at all, signed with `key`.
    public init(headerJSON: String, key: PrivateKey) {
        (apple, headerSegment, self.key) = (nil, Self.segment(headerJSON), key)
    }

    /// A compact JWS over `payloadJSON` (signed exactly as given).
    public func sign(_ payloadJSON: String) throws -> String {
        if let apple { return try apple.sign(payload: Array(payloadJSON.utf8)) }
        return try sign(payloadSegment: Self.segment(payloadJSON))
    }

    /// A token whose segments are taken literally (a test may have broken them) and validly signed.
    public func sign(headerSegment: String? = nil, payloadSegment: String) throws -> String {
        try TestJWS.sign(signingInput: (headerSegment ?? self.headerSegment) + "." + payloadSegment, key: key)
    }

    /// base64url without padding of `text`'s UTF-8.
    public static func segment(_ text: String) -> String { Base64.encode(Array(text.utf8), alphabet: .url) }
}

/// How a V2 verification failed: the ``V2AdapterError`` code and, for `nested_jws_invalid`, the inner code — the
/// `error` member of the fixtures' `.expected.json` files.
public struct V2Failure: Hashable, Sendable, CustomStringConvertible {
    public var code: String
    public var cause: String?

    public init(_ code: String, cause: String? = nil) { (self.code, self.cause) = (code, cause) }

    public init(_ error: V2AdapterError) { self.init(error.code.rawValue, cause: error.cause?.rawValue) }

    public var description: String { cause.map { "\(code)(\($0))" } ?? code }

    /// The failure `body` throws; nil when it succeeds.
    public static func of(_ body: () throws(V2AdapterError) -> Void) -> V2Failure? {
        do {
            try body()
            return nil
        } catch {
            return V2Failure(error)
        }
    }

    /// The `error` a golden file under `Fixtures/` expects (`{"ok":false,"error":{"code":…,"cause":…}}`); nil when
    /// it expects success.
    public static func expected(_ goldenPath: String) throws -> V2Failure? {
        let strings = try Fixtures.jsonStrings(goldenPath)
        return strings["error.code"].map { V2Failure($0, cause: strings["error.cause"]) }
    }
}
