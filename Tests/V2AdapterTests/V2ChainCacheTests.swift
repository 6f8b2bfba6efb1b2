import Canonical
import Crypto
import Synchronization
import TestSupport
import Testing
import Threads
import V2Adapter

/// The verified-chain cache under a flush attack: anyone can re-encode the protected header of a genuine token
/// (whitespace, member order, extra members) around Apple's real certificates and attach a bogus signature. Such
/// tokens must neither evict genuine entries nor cost a chain validation each; validity is still judged per
/// payload, and nothing but a chain ending at a pinned root is ever remembered.
@Suite struct V2ChainCacheTests {
    static let now = TestPKI.now
    static let signedDate: Int64 = 1_748_736_000_000

    static func x5c(_ names: [String] = ["leaf", "intermediate", "root"]) throws -> String {
        try names.map { "\"" + Base64.encode(try TestPKI.der($0), alphabet: .standard) + "\"" }.joined(separator: ",")
    }

    static func payload(uuid: Int, signedDate: Int64 = signedDate, environment: String = "Sandbox") -> String {
        """
        {"notificationType":"TEST","notificationUUID":"00000000-0000-4000-8000-\(String(repeating: "0", count: 12 - String(uuid).count))\(uuid)",\
        "data":{"bundleId":"com.example.gateway","environment":"\(environment)"},"version":"2.0","signedDate":\(signedDate)}
        """
    }

    /// Ten different encodings of the standard header (all valid JWS headers naming the same chain).
    static func reencodedHeaders() throws -> [String] {
        let x5c = try x5c()
        return [
            "{ \"alg\": \"ES256\", \"x5c\": [\(x5c)] }",
            "{\"x5c\":[\(x5c)],\"alg\":\"ES256\"}",
            "{\n\"alg\":\"ES256\",\n\"x5c\":[\(x5c)]\n}",
            "{\"alg\":\"ES256\",\"x5c\":[\(x5c)],\"typ\":\"JWT\"}",
        ] + (0..<6).map { "{\"alg\":\"ES256\",\"kid\":\"k\($0)\",\"x5c\":[\(x5c)]}" }
    }

    /// `header.payload` with a well-formed 64-byte signature over something else.
    static func forged(header: String, payload: String) throws -> [UInt8] {
        let input =
            Base64.encode(Array(header.utf8), alphabet: .url) + "." + Base64.encode(Array(payload.utf8), alphabet: .url)
        let unrelated = try TestPKI.key("leaf").signES256(Array("something else".utf8))
        return Array((input + "." + Base64.encode(unrelated, alphabet: .url)).utf8)
    }

    static func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as V2AdapterError {
            return error.code.rawValue
        } catch {
            return "not a V2AdapterError"
        }
    }

    /// The cache keeps a copy per thread stripe: a chain verified on one thread is a hit on every other.
    @Test func aChainVerifiedOnOneThreadIsAHitOnEveryOther() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple(), chainCacheCapacity: 4)
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        let first = verifier.chainCacheStatistics
        #expect(first.misses == 1)
        #expect(first.entries == 1)

        let tokens = try (0..<16).map { i in
            try TestJWS.testNotification(uuid: "00000000-0000-4000-8000-0000000001\(i < 10 ? "0" : "")\(i)")
        }
        let failures = Atomic<Int>(0)
        let threads = tokens.compactMap { token in
            OSThread.start(name: "iapgw-test") {
                do { _ = try adapter.verifyNotification(signedPayload: token, now: Self.now) } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(threads.count == 16)
        for thread in threads { thread.join() }
        #expect(failures.load(ordering: .relaxed) == 0)
        let after = verifier.chainCacheStatistics
        #expect(after.misses == 1)
        #expect(after.hits == first.hits + 16)
        #expect(after.entries == 1)
        #expect(verifier.certificateCacheStatistics.entries == 1)
    }

    @Test func reencodedHeadersWithBogusSignaturesDoNotEvictTheGenuineEntry() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple(), chainCacheCapacity: 2)
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        let genuine = try TestJWS.testNotification()
        _ = try adapter.verifyNotification(signedPayload: genuine, now: Self.now)
        #expect(verifier.chainCacheStatistics.entries == 1)

        for (i, header) in try Self.reencodedHeaders().enumerated() {
            let token = try Self.forged(header: header, payload: Self.payload(uuid: 100 + i))
            #expect(
                Self.code { _ = try adapter.verifyNotification(signedPayload: token, now: Self.now) } == "bad_signature"
            )
        }
        // None of the forgeries took a slot, so the genuine header is still there: the next genuine token is a hit.
        let before = verifier.chainCacheStatistics
        #expect(before.entries == 1)
        _ = try adapter.verifyNotification(
            signedPayload: try TestJWS.testNotification(uuid: "00000000-0000-4000-8000-000000000002"),
            now: Self.now
        )
        let after = verifier.chainCacheStatistics
        #expect(after.hits == before.hits + 1)
        #expect(after.misses == before.misses)
    }

    @Test func reencodedHeadersCostNoChainValidation() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple())
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        for (i, header) in try Self.reencodedHeaders().enumerated() {
            let token = try Self.forged(header: header, payload: Self.payload(uuid: 200 + i))
            #expect(
                Self.code { _ = try adapter.verifyNotification(signedPayload: token, now: Self.now) } == "bad_signature"
            )
        }
        // One full validation (the genuine token's); every re-encoded header found its chain by its certificates.
        let chains = verifier.certificateCacheStatistics
        #expect(chains.misses == 1)
        #expect(chains.hits == 10)
        #expect(chains.entries == 1)
        #expect(verifier.chainCacheStatistics.entries == 1)
    }

    @Test func aGenuinelySignedNewEncodingJoinsTheHeaderCache() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple())
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        let header = try Self.reencodedHeaders()[1]
        for i in 0..<2 {
            let token = try TestJWS.sign(
                headerJSON: header,
                payloadJSON: Self.payload(uuid: 300 + i),
                key: try TestPKI.key("leaf")
            )
            _ = try adapter.verifyNotification(signedPayload: token, now: Self.now)
        }
        #expect(verifier.chainCacheStatistics.misses == 1)
        #expect(verifier.chainCacheStatistics.hits == 1)
        #expect(verifier.chainCacheStatistics.entries == 1)
    }

    @Test func validityIsStillJudgedPerPayloadWhenTheChainIsKnownByItsCertificates() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple())
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        let leaf = try TestPKI.key("leaf")
        let headers = try Self.reencodedHeaders()
        // Genuinely signed, new header bytes, dated after the leaf expired (2030-01-01) and before it began (2024).
        let late = try TestJWS.sign(
            headerJSON: headers[2],
            payloadJSON: Self.payload(uuid: 401, signedDate: 1_924_992_000_000),
            key: leaf
        )
        let early = try TestJWS.sign(
            headerJSON: headers[3],
            payloadJSON: Self.payload(uuid: 402, signedDate: 1_672_531_200_000),
            key: leaf
        )
        let extreme = try TestJWS.sign(
            headerJSON: headers[4],
            payloadJSON: Self.payload(uuid: 403, signedDate: .min),
            key: leaf
        )
        for token in [late, early, extreme] {
            #expect(
                Self.code { _ = try adapter.verifyNotification(signedPayload: token, now: Self.now) }
                    == "certificate_expired"
            )
        }
        #expect(verifier.certificateCacheStatistics.misses == 1)
        // At the expiry second itself, as OpenSSL counts it.
        let atExpiry = try TestJWS.sign(
            headerJSON: headers[5],
            payloadJSON: Self.payload(uuid: 404, signedDate: 1_893_456_000_000),
            key: leaf
        )
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: atExpiry, now: Self.now) }
                == "certificate_expired"
        )
        let justBefore = try TestJWS.sign(
            headerJSON: headers[5],
            payloadJSON: Self.payload(uuid: 405, signedDate: 1_893_455_999_000),
            key: leaf
        )
        #expect(Self.code { _ = try adapter.verifyNotification(signedPayload: justBefore, now: Self.now) } == nil)
    }

    @Test func headerRulesStillApplyToAChainKnownByItsCertificates() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple())
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        let leaf = try TestPKI.key("leaf")
        let x5c = try Self.x5c()
        let es384 = try TestJWS.sign(
            headerJSON: "{\"alg\":\"ES384\",\"x5c\":[\(x5c)]}",
            payloadJSON: Self.payload(uuid: 501),
            key: leaf
        )
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: es384, now: Self.now) }
                == "unsupported_algorithm"
        )
        let crit = try TestJWS.sign(
            headerJSON: "{\"alg\":\"ES256\",\"crit\":[\"b64\"],\"x5c\":[\(x5c)]}",
            payloadJSON: Self.payload(uuid: 502),
            key: leaf
        )
        #expect(Self.code { _ = try adapter.verifyNotification(signedPayload: crit, now: Self.now) } == "malformed")
        let twoCerts = try TestJWS.sign(
            headerJSON: "{\"alg\":\"ES256\",\"x5c\":[\(try Self.x5c(["leaf", "intermediate"]))]}",
            payloadJSON: Self.payload(uuid: 503),
            key: leaf
        )
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: twoCerts, now: Self.now) }
                == "invalid_chain_length"
        )
    }

    @Test func anExtraRootsChainStaysSandboxOnlyWhenFoundByItsCertificates() throws {
        let verifier = AppleJWSVerifier(anchors: try TrustAnchors.apple(extraSandboxRoots: [try TestPKI.der("root")]))
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        let production = try TestJWS.sign(
            headerJSON: try Self.reencodedHeaders()[0],
            payloadJSON: Self.payload(uuid: 601, environment: "Production"),
            key: try TestPKI.key("leaf")
        )
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: production, now: Self.now) }
                == "untrusted_root"
        )
        #expect(verifier.certificateCacheStatistics.hits == 1)
    }

    @Test func onlyChainsEndingAtAPinnedRootAreRemembered() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple())
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        let other = try TestJWS.sign(
            headerJSON: TestJWS.header(certificates: [
                try TestPKI.der("other-leaf"), try TestPKI.der("other-intermediate"),
                try TestPKI.der("other-root"),
            ]),
            payloadJSON: Self.payload(uuid: 701),
            key: try TestPKI.key("other-leaf")
        )
        let expired = try TestJWS.sign(
            headerJSON: TestJWS.header(certificates: [
                try TestPKI.der("leaf-expired"), try TestPKI.der("intermediate"),
                try TestPKI.der("root"),
            ]),
            payloadJSON: Self.payload(uuid: 702),
            key: try TestPKI.key("leaf-expired")
        )
        for _ in 0..<3 {
            #expect(
                Self.code { _ = try adapter.verifyNotification(signedPayload: other, now: Self.now) }
                    == "untrusted_root"
            )
            #expect(
                Self.code { _ = try adapter.verifyNotification(signedPayload: expired, now: Self.now) }
                    == "certificate_expired"
            )
        }
        #expect(verifier.certificateCacheStatistics.entries == 0)
        #expect(verifier.chainCacheStatistics.entries == 0)
    }

    @Test func capacityZeroStillVerifiesEverything() throws {
        let verifier = AppleJWSVerifier(anchors: try TestPKI.anchorsAsApple(), chainCacheCapacity: 0)
        let adapter = V2Adapter(verifier: verifier, apps: TestPKI.apps)
        for _ in 0..<2 {
            _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        }
        let token = try Self.forged(header: try Self.reencodedHeaders()[0], payload: Self.payload(uuid: 801))
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: token, now: Self.now) } == "bad_signature"
        )
        #expect(verifier.chainCacheStatistics.entries == 0 && verifier.certificateCacheStatistics.entries == 0)
    }
}
