import Crypto
import TestSupport
import Testing

@Suite struct X509TrustStoreTests {
    /// 2025-06-01T00:00:00Z, the fixtures' signedDate.
    static let june2025: Int64 = 1_748_736_000
    /// 2031-01-01T00:00:00Z, after the leaf's notAfter (2030-01-01).
    static let january2031: Int64 = 1_924_992_000

    static func certificate(_ name: String) throws -> X509Certificate {
        try X509Certificate(der: try TestPKI.der(name))
    }
    static func store() throws -> X509TrustStore { try X509TrustStore(anchor: try certificate("root")) }

    /// The failure of a validation, nil when it succeeds.
    static func failure(_ leaf: String, _ intermediates: [String], at time: Int64) throws -> X509PathFailure? {
        let store = try store()
        let leaf = try certificate(leaf)
        let intermediates = try intermediates.map(certificate)
        do {
            try store.validate(leaf: leaf, intermediates: intermediates, at: time)
            return nil
        } catch {
            return error
        }
    }

    @Test func validatesTheMainChainAtTheFixturesSignedDate() throws {
        #expect(try Self.failure("leaf", ["intermediate"], at: Self.june2025) == nil)
        #expect(try Self.store().anchor.der == (try TestPKI.der("root")))
    }

    @Test func acceptsTheAnchorAlsoListedAmongTheIntermediates() throws {
        #expect(try Self.failure("leaf", ["intermediate", "root"], at: Self.june2025) == nil)
    }

    @Test func rejectsTheMainChainAfterTheLeafExpired() throws {
        let failure = try #require(try Self.failure("leaf", ["intermediate"], at: Self.january2031))
        #expect(failure.kind == .outsideValidity)
        #expect(failure.openSSLCode == 10)  // X509_V_ERR_CERT_HAS_EXPIRED
        #expect(failure.message.contains("depth 0"))
    }

    @Test func rejectsTheMainChainBeforeTheLeafIsValid() throws {
        // 2023-06-01: the intermediate is valid, the leaf (from 2024-01-01) not yet.
        let failure = try #require(try Self.failure("leaf", ["intermediate"], at: 1_685_577_600))
        #expect(failure.kind == .outsideValidity)
        #expect(failure.openSSLCode == 9)  // X509_V_ERR_CERT_NOT_YET_VALID
    }

    /// OpenSSL counts notBefore itself as valid and notAfter itself as expired.
    @Test(
        arguments: [
            (1_704_067_200 - 1, false), (1_704_067_200, true),  // leaf notBefore 2024-01-01
            (1_893_456_000 - 1, true), (1_893_456_000, false),  // leaf notAfter 2030-01-01
        ] as [(Int64, Bool)]
    )
    func appliesTheValidityBoundariesToTheSecond(_ time: Int64, _ valid: Bool) throws {
        let failure = try Self.failure("leaf", ["intermediate"], at: time)
        #expect((failure == nil) == valid)
        if !valid { #expect(failure?.kind == .outsideValidity) }
    }

    @Test func rejectsAnExpiredLeaf() throws {
        let failure = try #require(try Self.failure("leaf-expired", ["intermediate"], at: Self.june2025))
        #expect(failure.kind == .outsideValidity)
        #expect(failure.openSSLCode == 10)
        // The same leaf was fine in its own year.
        #expect(try Self.failure("leaf-expired", ["intermediate"], at: 1_593_561_600) == nil)  // 2020-07-01
    }

    @Test func rejectsACompleteChainUnderAnotherRoot() throws {
        let failure = try #require(try Self.failure("other-leaf", ["other-intermediate"], at: Self.june2025))
        #expect(failure.kind == .untrustedIssuer)
        // Even with the other root supplied as an untrusted certificate.
        let withRoot = try #require(
            try Self.failure("other-leaf", ["other-intermediate", "other-root"], at: Self.june2025)
        )
        #expect(withRoot.kind == .untrustedIssuer)
    }

    @Test func rejectsALookAlikeLeafUnderTheRealIntermediate() throws {
        // Same issuer name as the real intermediate, but its AKI names another key: OpenSSL does not take the real
        // intermediate as the issuer at all (as `openssl verify` reports: error 20 at depth 0).
        let failure = try #require(try Self.failure("other-leaf", ["intermediate"], at: Self.june2025))
        #expect(failure.kind == .untrustedIssuer)
        #expect(failure.openSSLCode == 20)
    }

    @Test func rejectsALeafUnderAnIntermediateThatIsNotACA() throws {
        let failure = try #require(
            try Self.failure("leaf-under-intermediate-not-ca", ["intermediate-not-ca"], at: Self.june2025)
        )
        // OpenSSL 3.0 stops at "invalid CA certificate" (X509_V_ERR_INVALID_CA, 79) at depth 1, as `openssl verify
        // -x509_strict` reports; the store files it under `.invalid`.
        #expect(failure.kind == .invalid)
        #expect(failure.openSSLCode == 79)
        #expect(failure.message == "invalid CA certificate (depth 1)")
    }

    @Test func rejectsALeafWithoutItsIntermediate() throws {
        let failure = try #require(try Self.failure("leaf", [], at: Self.june2025))
        #expect(failure.kind == .untrustedIssuer)
        #expect(failure.openSSLCode == 20)  // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
    }

    @Test func rejectsASelfSignedRootThatIsNotTheAnchor() throws {
        let failure = try #require(try Self.failure("other-root", [], at: Self.june2025))
        #expect(failure.kind == .untrustedIssuer)
        #expect(failure.openSSLCode == 18)  // X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT
    }

    @Test func validatesSixteenPathsConcurrentlyWithOneSharedStore() async throws {
        let store = try Self.store()
        let leaf = try Self.certificate("leaf")
        let intermediate = try Self.certificate("intermediate")
        let successes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    do {
                        try store.validate(leaf: leaf, intermediates: [intermediate], at: Self.june2025)
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var count = 0
            for await ok in group where ok { count += 1 }
            return count
        }
        #expect(successes == 16)
    }

    @Test func mixedConcurrentValidationsEachGetTheirOwnResult() async throws {
        let store = try Self.store()
        let leaf = try Self.certificate("leaf")
        let expired = try Self.certificate("leaf-expired")
        let intermediate = try Self.certificate("intermediate")
        let kinds = await withTaskGroup(of: (Int, X509PathFailure.Kind?).self) { group in
            for i in 0..<16 {
                group.addTask {
                    do throws(X509PathFailure) {
                        try store.validate(
                            leaf: i.isMultiple(of: 2) ? leaf : expired,
                            intermediates: [intermediate],
                            at: Self.june2025
                        )
                        return (i, nil)
                    } catch {
                        return (i, error.kind)
                    }
                }
            }
            var out = [X509PathFailure.Kind?](repeating: nil, count: 16)
            for await (i, kind) in group { out[i] = kind }
            return out
        }
        #expect(kinds == (0..<16).map { $0.isMultiple(of: 2) ? nil : X509PathFailure.Kind.outsideValidity })
    }
}
