internal import Canonical
internal import Crypto
internal import V2Adapter
internal import WireJSON

/// `iap-gateway bench verify`: full V2 notifications (outer + signed transaction + signed renewal info, then the
/// canonical mapping) verified on one thread, against libcrypto's own P-256 verify rate measured in the same run.
/// A notification needs three ES256 verifies, so the bound is `openssl_p256_verifies_per_second / 3`.
public enum VerifyBenchmark {
    public struct Result: Encodable, Sendable {
        public var notificationsPerSecond: Double
        public var coldNotificationsPerSecond: Double
        public var opensslP256VerifiesPerSecond: Double
        public var fractionOfBound: Double
        /// Wall time given to baseline + warm, interleaved in 50 ms slices (cold runs after, up to 2 s).
        public var seconds: Double
        public var build: String
        public var sample: String

        enum CodingKeys: String, CodingKey {
            case notificationsPerSecond = "notifications_per_second"
            case coldNotificationsPerSecond = "cold_notifications_per_second"
            case opensslP256VerifiesPerSecond = "openssl_p256_verifies_per_second"
            case fractionOfBound = "fraction_of_bound"
            case seconds
            case build, sample
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func run(secondsPerPhase: Double) throws -> Result {
        let token = BenchSample.signedPayload
        let anchors = try TrustAnchors.apple()
        let app = V2App(bundleID: BenchSample.bundleID, appAppleID: 1_470_168_868, environments: [.sandbox])
        let warm = V2Adapter(verifier: AppleJWSVerifier(anchors: anchors), apps: [app])
        let cold = V2Adapter(verifier: AppleJWSVerifier(anchors: anchors, chainCacheCapacity: 0), apps: [app])
        let now: Int64 = 1_759_302_518_835

        // Sanity: the sample verifies and maps, and carries both nested tokens.
        let check = try warm.verifyNotification(signedPayload: token, now: now)
        guard check.transaction != nil, check.renewalInfo != nil, check.canonicalEvents().count == 1 else {
            throw Failure(description: "benchmark sample lacks a transaction or renewal info")
        }

        // Baseline: libcrypto verifying one P-256 signature over a precomputed digest, context reused —
        // the loop `openssl speed ecdsap256` times. Same key and signature as the sample's outer token.
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let header = try JSONParser.parse(try Base64.decode(parts[0], alphabet: .url))
        guard case .string(let leafB64)? = header.objectValue?["x5c"]?.arrayValue?.first else {
            throw Failure(description: "sample header has no x5c")
        }
        let leaf = try X509Certificate(der: try Base64.decode(Array(leafB64.utf8), alphabet: .standard))
        let key = try leaf.publicKey()
        let digest = SHA256.hash(token[0..<(parts[0].count + 1 + parts[1].count)])
        guard let der = ECDSASignature.der(fromRaw: try Base64.decode(parts[2], alphabet: .url)) else {
            throw Failure(description: "sample signature is not raw R‖S")
        }
        let baseline = try P256VerifyBaseline(key: key, digest: digest, derSignature: der)
        // The machine is shared: its speed drifts over seconds. Baseline and gateway therefore run interleaved
        // in short slices, so both see the same conditions and the ratio stays meaningful.
        var baselineMeter = Meter()
        var warmMeter = Meter()
        let slices = max(2, Int(secondsPerPhase / 0.1))
        for _ in 0..<slices {
            baselineMeter.run(seconds: 0.05) {
                if !baseline.verifyOnce() { fatalError("baseline verify failed") }
            }
            warmMeter.run(seconds: 0.05) {
                guard let n = try? warm.verifyNotification(signedPayload: token, now: now),
                    n.canonicalEvents().count == 1
                else { fatalError("warm verify failed") }
            }
        }
        var coldMeter = Meter()
        coldMeter.run(seconds: min(secondsPerPhase, 2)) {
            guard let n = try? cold.verifyNotification(signedPayload: token, now: now), n.canonicalEvents().count == 1
            else {
                fatalError("cold verify failed")
            }
        }
        let baselineRate = baselineMeter.rate
        let warmRate = warmMeter.rate
        let coldRate = coldMeter.rate
        return Result(
            notificationsPerSecond: round1(warmRate),
            coldNotificationsPerSecond: round1(coldRate),
            opensslP256VerifiesPerSecond: round1(baselineRate),
            fractionOfBound: (warmRate / (baselineRate / 3) * 1000).rounded() / 1000,
            seconds: secondsPerPhase,
            build: buildKind,
            sample:
                "Fixtures/v2/notif-did-renew-sandbox-2025.json (real Apple DID_RENEW: outer + transaction + renewal)"
        )
    }

    /// Which build made the numbers (debug numbers mean nothing).
    static var buildKind: String {
        #if DEBUG
        "debug (numbers are meaningless: use swift build -c release)"
        #else
        "release"
        #endif
    }

    private static func round1(_ x: Double) -> Double { (x * 10).rounded() / 10 }

    /// Accumulates calls and wall time over several runs.
    struct Meter {
        var calls = 0
        var seconds = 0.0
        var rate: Double { seconds > 0 ? Double(calls) / seconds : 0 }

        /// Calls `body` repeatedly for about `duration` seconds of wall time on this thread.
        mutating func run(seconds duration: Double, _ body: () -> Void) {
            let clock = ContinuousClock()
            let start = clock.now
            let deadline = start.advanced(by: .microseconds(Int64(duration * 1_000_000)))
            var now = start
            repeat {
                for _ in 0..<8 { body() }
                calls += 8
                now = clock.now
            } while now < deadline
            let elapsed = now - start
            seconds += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
    }
}
