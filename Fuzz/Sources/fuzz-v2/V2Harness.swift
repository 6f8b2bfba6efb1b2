import Canonical
import Crypto
import FuzzSupport
import V2Adapter

/// The V2 verifier (`V2Adapter.verifyNotification`, `verifyTransaction`, `verifyRenewalInfo`) with the test PKI's
/// root pinned next to Apple Root CA - G3 (and `other-root` as a sandbox-only root), so both the real samples and the
/// synthetic seeds verify.
///
/// Input: a mode byte, then the mode's bytes. Mode byte bits:
/// - 0–2 what the rest is:
///   0 a `signedPayload` token as-is (notification, no freshness) · 1 the same with live-traffic freshness ·
///   2 a bare `signedTransactionInfo` · 3 a bare `signedRenewalInfo` ·
///   4 notification payload JSON, signed here with the test leaf (nested tokens written as JSON objects are signed
///     too: see `TestSigner.signNested`), so payload decoding, nested JWS and the canonical mapping are reached ·
///   5 transaction payload JSON, signed here · 6 renewal info payload JSON, signed here ·
///   7 certificates: the next byte picks x5c[0…2], the rest replaces that certificate's DER (bit 3 set: the rest is
///     the whole header JSON instead); the payload is a fixed TEST notification signed with the test leaf.
/// - 3 freshness on for mode 4 (header JSON for mode 7).
/// - 4 a verifier without the chain cache (every token validates its chain).
/// - 5 no configured apps (authenticate only, as `verify` without `--config`).
@main enum V2FuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private struct Setup: Sendable {
    let signer = TestSigner()
    let cached: V2Adapter
    let uncached: V2Adapter
    let cachedNoApps: V2Adapter
    let uncachedNoApps: V2Adapter

    init() {
        let anchors: TrustAnchors
        do {
            anchors = try TrustAnchors(
                appleRoots: [TrustAnchors.appleRootCAG3, FuzzSupport.fixture("Fixtures/test-pki/root.der")],
                sandboxOnlyRoots: [FuzzSupport.fixture("Fixtures/test-pki/other-root.der")]
            )
        } catch { fatalError("fuzz: trust anchors: \(error)") }
        // The synthetic fixtures' apps, and the real samples' bundle (sandbox only, as Apple's test app is).
        let apps = [
            V2App(bundleID: "com.example.gateway", appAppleID: 1_234_567_890, environments: [.production, .sandbox]),
            V2App(bundleID: "com.example.prodonly", appAppleID: 2_222_222_222, environments: [.production]),
            V2App(
                bundleID: "com.loki-project.loki-messenger",
                appAppleID: 1_470_168_868,
                environments: [.production, .sandbox]
            ),
            V2App(bundleID: "Com.VoiceRecording.Telephone", appAppleID: nil, environments: [.sandbox]),
        ]
        let withCache = AppleJWSVerifier(anchors: anchors)
        let withoutCache = AppleJWSVerifier(anchors: anchors, chainCacheCapacity: 0)
        cached = V2Adapter(verifier: withCache, apps: apps)
        uncached = V2Adapter(verifier: withoutCache, apps: apps)
        cachedNoApps = V2Adapter(verifier: withCache, apps: nil)
        uncachedNoApps = V2Adapter(verifier: withoutCache, apps: nil)
    }
}

private let setup = Setup()

/// 2025-06-01T00:01:00Z: inside the test leaf's validity, a minute after the synthetic fixtures' signedDate.
private let now: Int64 = 1_748_736_060_000

private let fixedPayload = Array(
    #"{"notificationType":"TEST","notificationUUID":"00000000-0000-4000-8000-000000000001","data":{"bundleId":"com.example.gateway","environment":"Sandbox"},"version":"2.0","signedDate":1748736000000}"#
        .utf8
)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let adapter: V2Adapter
    switch (mode & 0x10 != 0, mode & 0x20 != 0) {
    case (false, false): adapter = setup.cached
    case (true, false): adapter = setup.uncached
    case (false, true): adapter = setup.cachedNoApps
    case (true, true): adapter = setup.uncachedNoApps
    }
    let flag = mode & 0x08 != 0
    let signer = setup.signer

    switch mode & 0x07 {
    case 0: notification(adapter, input.rest(), freshness: false)
    case 1: notification(adapter, input.rest(), freshness: true)
    case 2:
        let t = input.rest()
        token { () throws(V2AdapterError) in try adapter.verifyTransaction(t, now: now) }
    case 3:
        let t = input.rest()
        token { () throws(V2AdapterError) in try adapter.verifyRenewalInfo(t, now: now) }
    case 4: notification(adapter, signer.sign(payload: signer.signNested(input.rest())), freshness: flag)
    case 5:
        let t = signer.sign(payload: input.rest())
        token { () throws(V2AdapterError) in try adapter.verifyTransaction(t, now: now) }
    case 6:
        let t = signer.sign(payload: input.rest())
        token { () throws(V2AdapterError) in try adapter.verifyRenewalInfo(t, now: now) }
    default:
        if flag {
            notification(adapter, signer.sign(header: input.rest(), payload: fixedPayload), freshness: false)
        } else {
            var certificates = [signer.leaf, signer.intermediate, signer.root]
            certificates[Int(input.byte() % 3)] = input.rest()
            notification(
                adapter,
                signer.sign(header: TestSigner.header(certificates: certificates), payload: fixedPayload),
                freshness: false
            )
        }
    }
    return 0
}

private func notification(_ adapter: V2Adapter, _ token: [UInt8], freshness: Bool) {
    let verified: VerifiedNotificationV2
    do {
        verified = try adapter.verifyNotification(signedPayload: token, now: now, freshness: freshness ? .init() : nil)
    } catch {
        debug("refused: \(error)")
        return
    }
    debug("accepted: \(verified.payload.notificationType ?? "?")")
    for event in verified.canonicalEvents() { _ = event.id }
}

private func token<P>(_ verify: () throws(V2AdapterError) -> VerifiedTokenV2<P>) {
    do throws(V2AdapterError) {
        let verified = try verify()
        debug("accepted: \(verified.leafSerial)")
    } catch { debug("refused: \(error)") }
}

/// `IAPGW_FUZZ_DEBUG=1`: one line per input saying what the verifier made of it (for checking seeds reach deep).
private func debug(_ line: @autoclosure () -> String) {
    if FuzzSupport.debugging { print(line()) }
}
