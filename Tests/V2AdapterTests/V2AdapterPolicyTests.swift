import Canonical
import Crypto
import TestSupport
import Testing
import V2Adapter

/// Apple's chain policy beyond what the fixture files show on their own: sandbox-only extra roots, the
/// verified-chain cache, freshness, size limits, robustness against arbitrary mutations.
@Suite struct V2AdapterPolicyTests {
    static let now = TestPKI.now

    static func adapter(_ anchors: TrustAnchors, apps: [V2App]? = TestPKI.apps, cache: Int = 64) -> V2Adapter {
        V2Adapter(verifier: AppleJWSVerifier(anchors: anchors, chainCacheCapacity: cache), apps: apps)
    }

    /// The stable code a call fails with, nil when it succeeds, "not a V2AdapterError" otherwise.
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

    // MARK: roots

    @Test func extraRootVouchesForSandboxPayloads() throws {
        let anchors = try TrustAnchors.apple(extraSandboxRoots: [try TestPKI.der("root")])
        let n = try Self.adapter(anchors).verifyNotification(
            signedPayload: try Fixtures.token("v2-synthetic/notif-did-renew.json"),
            now: Self.now
        )
        #expect(n.environment == .sandbox)
        #expect(n.canonicalEvents().first?.kind == .renewal)
    }

    @Test func extraRootNeverVouchesForProductionPayloads() throws {
        let anchors = try TrustAnchors.apple(extraSandboxRoots: [try TestPKI.der("root")])
        let token = try Fixtures.token("v2-synthetic/notif-subscribed-initial-buy-production.json")
        #expect(
            Self.code { _ = try Self.adapter(anchors).verifyNotification(signedPayload: token, now: Self.now) }
                == "untrusted_root"
        )
        // The same token passes when the root is trusted like Apple's: the refusal is about the root's standing.
        _ = try Self.adapter(try TestPKI.anchorsAsApple()).verifyNotification(signedPayload: token, now: Self.now)
    }

    @Test func defaultAnchorsTrustOnlyAppleRootG3() throws {
        let anchors = try TrustAnchors.apple()
        #expect(anchors.roots.count == 1)
        #expect(
            SHA256.hex(anchors.roots[0].certificate.der)
                == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
        )
        #expect(anchors.roots[0].trustedForProduction)
        let token = try Fixtures.token("v2-synthetic/notif-test.json")
        #expect(
            Self.code {
                _ = try Self.adapter(anchors, apps: nil).verifyNotification(signedPayload: token, now: Self.now)
            } == "untrusted_root"
        )
    }

    @Test func realAppleNotificationPassesTheConfiguredAppPolicy() throws {
        let token = try Fixtures.token("v2/notif-did-renew-sandbox-2025.json")
        let bundle = "com.loki-project.loki-messenger"
        let anchors = try TrustAnchors.apple()
        let ok = Self.adapter(
            anchors,
            apps: [V2App(bundleID: bundle, appAppleID: 1_470_168_868, environments: [.sandbox])]
        )
        #expect(try ok.verifyNotification(signedPayload: token, now: Self.now).bundleID == bundle)

        let productionOnly = Self.adapter(
            anchors,
            apps: [V2App(bundleID: bundle, appAppleID: 1_470_168_868, environments: [.production])]
        )
        #expect(
            Self.code { _ = try productionOnly.verifyNotification(signedPayload: token, now: Self.now) }
                == "environment_mismatch"
        )

        let otherBundle = Self.adapter(
            anchors,
            apps: [V2App(bundleID: "com.example.other", appAppleID: 1, environments: [.sandbox])]
        )
        #expect(
            Self.code { _ = try otherBundle.verifyNotification(signedPayload: token, now: Self.now) }
                == "unknown_bundle"
        )
    }

    @Test func bareRenewalInfoWithoutEnvironmentFailsAnEnvironmentPolicy() throws {
        let token = try Fixtures.token("v2/renewal-no-environment-2021.json", member: "signedRenewalInfo")
        let anchors = try TrustAnchors.apple()
        // Authenticate-only mode accepts it and reports no environment…
        #expect(try Self.adapter(anchors, apps: nil).verifyRenewalInfo(token, now: Self.now).environment == nil)
        // …but a configured gateway cannot tell where it belongs.
        #expect(
            Self.code { _ = try Self.adapter(anchors).verifyRenewalInfo(token, now: Self.now) }
                == "environment_mismatch"
        )
    }

    // MARK: chain cache

    @Test func secondVerificationHitsTheChainCache() throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple())
        let token = try Fixtures.token("v2-synthetic/notif-did-renew.json")
        _ = try adapter.verifyNotification(signedPayload: token, now: Self.now)
        let first = adapter.verifier.chainCacheStatistics
        _ = try adapter.verifyNotification(signedPayload: token, now: Self.now)
        let second = adapter.verifier.chainCacheStatistics
        #expect(first.misses == 1)  // outer, transaction and renewal share one header
        #expect(second.misses == first.misses)
        #expect(second.hits == first.hits + 3)
    }

    @Test(arguments: [64, 0])
    func cachedChainIsStillCheckedAgainstEachPayloadsDate(cacheCapacity: Int) throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple(), cache: cacheCapacity)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        // Same header bytes, signed by the real leaf key, but dated after the leaf expired (2030-01-01).
        let late = try TestJWS.testNotification(signedDate: 1_924_992_000_000)  // 2031-01-01
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: late, now: 1_924_992_000_000) }
                == "certificate_expired"
        )
        let early = try TestJWS.testNotification(signedDate: 1_672_531_200_000)  // 2023-01-01, before the leaf
        #expect(
            Self.code { _ = try adapter.verifyNotification(signedPayload: early, now: Self.now) }
                == "certificate_expired"
        )
    }

    /// The leaf expires at 2030-01-01T00:00:00Z: OpenSSL counts that very second as expired and the cache must agree,
    /// or a cached chain would accept what a cold one refuses.
    @Test(arguments: [64, 0])
    func cachedAndColdChainsAgreeAtTheExpirySecond(cacheCapacity: Int) throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple(), cache: cacheCapacity)
        _ = try adapter.verifyNotification(signedPayload: try TestJWS.testNotification(), now: Self.now)
        let notAfter: Int64 = 1_893_456_000_000
        _ = try adapter.verifyNotification(
            signedPayload: try TestJWS.testNotification(signedDate: notAfter - 1000),
            now: notAfter
        )
        #expect(
            Self.code {
                _ = try adapter.verifyNotification(
                    signedPayload: try TestJWS.testNotification(signedDate: notAfter),
                    now: notAfter
                )
            } == "certificate_expired"
        )
    }

    @Test func chainCacheStaysWithinItsCapacity() throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple(), cache: 2)
        let certs = [try TestPKI.der("leaf"), try TestPKI.der("intermediate"), try TestPKI.der("root")]
        let x5c = certs.map { "\"" + Base64.encode($0, alphabet: .standard) + "\"" }.joined(separator: ",")
        for i in 0..<5 {
            // Distinct header bytes (an extra member we ignore) → distinct cache keys.
            let header = "{\"alg\":\"ES256\",\"x5c\":[\(x5c)],\"kid\":\"k\(i)\"}"
            let payload =
                "{\"notificationType\":\"TEST\",\"notificationUUID\":\"u\(i)\",\"data\":{\"bundleId\":\"com.example.gateway\",\"environment\":\"Sandbox\"},\"signedDate\":1748736000000}"
            _ = try adapter.verifyNotification(
                signedPayload: try TestJWS.sign(headerJSON: header, payloadJSON: payload, key: try TestPKI.key("leaf")),
                now: Self.now
            )
        }
        let stats = adapter.verifier.chainCacheStatistics
        #expect(stats.entries == 2)
        #expect(stats.misses == 5)
    }

    @Test func concurrentVerificationsShareOneVerifier() async throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple())
        let token = try Fixtures.token("v2-synthetic/notif-did-renew.json")
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 {
                group.addTask { (try? adapter.verifyNotification(signedPayload: token, now: Self.now)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 16 && results.allSatisfy { $0 })
    }

    // MARK: limits and freshness

    @Test func oneMebibyteHeaderIsMalformedNotParsed() throws {
        let header = "{\"alg\":\"ES256\",\"x5c\":[],\"pad\":\"" + String(repeating: "A", count: 1024 * 1024) + "\"}"
        let token = Array((Base64.encode(Array(header.utf8), alphabet: .url) + ".e30.AAAA").utf8)
        #expect(
            Self.code {
                _ = try Self.adapter(try TestPKI.anchorsAsApple()).verifyNotification(
                    signedPayload: token,
                    now: Self.now
                )
            } == "malformed"
        )
    }

    @Test func liveTrafficOutsideTheFreshnessWindowIsStale() throws {
        let adapter = Self.adapter(try TestPKI.anchorsAsApple())
        let signed: Int64 = 1_748_736_000_000
        let day: Int64 = 86_400_000
        let token = try TestJWS.testNotification(signedDate: signed)
        let fresh = V2Adapter.Freshness()
        // Within 10 days: fine. Beyond: stale — unless the caller is backfilling (no freshness given).
        _ = try adapter.verifyNotification(signedPayload: token, now: signed + 9 * day, freshness: fresh)
        #expect(
            Self.code {
                _ = try adapter.verifyNotification(signedPayload: token, now: signed + 11 * day, freshness: fresh)
            } == "stale_notification"
        )
        _ = try adapter.verifyNotification(signedPayload: token, now: signed + 11 * day)
        // Signed more than five minutes in the future.
        #expect(
            Self.code {
                _ = try adapter.verifyNotification(signedPayload: token, now: signed - 10 * 60_000, freshness: fresh)
            } == "stale_notification"
        )
        _ = try adapter.verifyNotification(signedPayload: token, now: signed - 60_000, freshness: fresh)
    }

    // MARK: robustness

    /// Deterministic mutations of a real Apple notification (bytes flipped, deleted, duplicated, truncated):
    /// every one is either rejected with a stable code or — when the mutation is invisible — still verifies.
    @Test func mutatedTokensNeverCrashAndAlwaysGetACode() throws {
        let adapter = Self.adapter(try TrustAnchors.apple(), apps: nil)
        let original = try Fixtures.token("v2/notif-did-renew-sandbox-2025.json")
        let codes: Set<String> = [
            "malformed", "unsupported_algorithm", "invalid_chain_length", "untrusted_root", "invalid_certificate",
            "certificate_expired", "missing_apple_marker", "bad_signature", "nested_jws_invalid",
            "unsupported_environment",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var rejected = 0
        for _ in 0..<300 {
            var t = original
            switch next(4) {
            case 0: t[next(t.count)] ^= UInt8(1 << next(8))
            case 1: t.remove(at: next(t.count))
            case 2: t.insert(t[next(t.count)], at: next(t.count))
            default: t = Array(t.prefix(next(t.count)))
            }
            do {
                _ = try adapter.verifyNotification(signedPayload: t, now: Self.now)
            } catch {
                rejected += 1
                #expect(codes.contains(error.code.rawValue), "unexpected code \(error.code)")
            }
        }
        #expect(rejected > 250)
    }
}
