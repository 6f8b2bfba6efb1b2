import Crypto
import FuzzSupport
import Receipts
import TestPKI
import WireJSON

/// The receipt reader (`Receipts.ReceiptReader.read`, text and decoded bytes), its signature policies (app receipts,
/// iOS 6 transaction receipts), the old-style property-list parser, and `receiptObject` / `report` on whatever reads —
/// with Apple Inc. Root, and test chains (generated at start-up, RSA: one of the app receipts' profile, one of the
/// iTunes Store CA's) as extra sandbox roots with their intermediates, or not.
///
/// Input: a mode byte, then the mode's bytes. Mode byte bits:
/// - 0–1 what the rest is:
///   0 `receipt-data` text as a client sends it · 1 the decoded bytes (an app receipt's DER, a transaction receipt's
///   property list) · 2 an app receipt's payload (a DER SET of attributes), signed here as an app receipt with the
///   test chain, so mutations reach the payload reader and the policy behind a genuine signature · 3 a property
///   list: parsed alone, then as the `purchase-info` of a transaction receipt.
/// - 2 the test roots are extra sandbox roots, their intermediates known (else Apple's root alone).
/// - 3 mode 2 signs with SHA-1 (else SHA-256); mode 3 signs the `purchase-info` as a sandbox transaction receipt with
///   a test chain, so mutations reach the purchase-info reader and the policy behind a genuine signature.
/// - 4 mode 3 signs with the app receipts' chain (version 3; else the iTunes Store CA's, version 2).
///
/// Invariants on every receipt that reads: `receiptObject` and `report` are JSON that the project's parser reads back
/// as the same value; an authenticated receipt has a root and no failure, was judged at its creation date (a
/// transaction receipt: its purchase date, with SHA-1) and is sandbox when its root is an extra one; an
/// unauthenticated one says why; Xcode receipts are never authenticated; a lookup id is digits only and never an
/// Xcode receipt's. Mode 2 with the test root: a payload that reads is authenticated exactly when it is a sandbox
/// receipt, not Xcode, made while the test chain was valid. Mode 3 signed: a `purchase-info` that reads is
/// authenticated exactly when the test roots are trusted and it was bought while the test chain was valid.
@main enum ReceiptFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private struct Setup: Sendable {
    /// 2020-01-01 → 2040-01-01 (seconds).
    static let notBefore: Int64 = 1_577_836_800
    static let notAfter: Int64 = 2_208_988_800
    let pki: GeneratedReceiptPKI
    /// Version-2 transaction receipts' chain.
    let iTunes: GeneratedReceiptPKI
    let apple = ReceiptTrust()
    let withTestRoot: ReceiptTrust

    init() {
        do {
            pki = try GeneratedReceiptPKI.generate(
                notBefore: Self.notBefore,
                notAfter: Self.notAfter,
                names: .test("iap-gateway Fuzz")
            )
            iTunes = try GeneratedReceiptPKI.generate(
                notBefore: Self.notBefore,
                notAfter: Self.notAfter,
                names: .test("iap-gateway Fuzz iTunes"),
                profile: .iTunesStore
            )
        } catch { fatalError("fuzz: test PKI: \(error)") }
        withTestRoot = ReceiptTrust(
            extraSandboxRoots: [pki.root.der, iTunes.root.der],
            extraIntermediates: [pki.intermediate.der, iTunes.intermediate.der]
        )
    }
}

private let setup = Setup()

/// 2025-06-01T00:00:00Z: the request date of every `receipt` object (a fixed value, never the clock).
private let requestDate: Int64 = 1_748_736_000_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let trust = mode & 0x04 != 0 ? setup.withTestRoot : setup.apple
    let bytes = input.rest()
    switch mode & 0x03 {
    case 0:
        judge { () throws(ReceiptError) in try ReceiptReader.read(bytes, trust: trust) }
    case 1:
        judge { () throws(ReceiptError) in try ReceiptReader.read(decoded: bytes, trust: trust) }
    case 2:
        let signed: [UInt8]
        do { signed = try setup.pki.sign(bytes, digest: mode & 0x08 != 0 ? .sha1 : .sha256) } catch {
            FuzzSupport.fail("signing a payload failed: \(error)")
        }
        let decoded = judge { () throws(ReceiptError) in try ReceiptReader.read(decoded: signed, trust: trust) }
        if let decoded, mode & 0x04 != 0 { judgeSigned(decoded) }
    default:
        do {
            let entries = try OldStylePlist.parse(bytes)
            debug("property list: \(entries.count) entries")
        } catch { debug("property list refused: \(error.code)") }
        guard mode & 0x08 != 0 else {
            let outer = Array("{ \"purchase-info\" = \"\(Base64.encode(bytes, alphabet: .standard))\"; }".utf8)
            judge { () throws(ReceiptError) in try ReceiptReader.read(decoded: outer, trust: trust) }
            return 0
        }
        let chain = mode & 0x10 != 0 ? setup.pki : setup.iTunes
        let outer: [UInt8]
        do {
            let signature = try ReceiptBuilder.transactionSignature(
                purchaseInfo: bytes,
                leafKey: chain.leafKey,
                leaf: chain.leaf
            )
            outer = ReceiptBuilder.transactionReceipt(purchaseInfo: bytes, signature: signature, environment: "Sandbox")
        } catch { FuzzSupport.fail("signing a purchase-info failed: \(error)") }
        let decoded = judge { () throws(ReceiptError) in try ReceiptReader.read(decoded: outer, trust: trust) }
        if let decoded { judgeSignedTransaction(decoded, trusted: mode & 0x04 != 0) }
    }
    return 0
}

/// Reads with `read`, checks the invariants every receipt keeps, and returns what was read.
@discardableResult
private func judge(_ read: () throws(ReceiptError) -> DecodedReceipt) -> DecodedReceipt? {
    let r: DecodedReceipt
    do { r = try read() } catch {
        debug("refused: \(error.code) \(error.reason)")
        return nil
    }
    debug("read: \(r.format.rawValue) valid=\(r.signature.valid) failure=\(r.signature.failure ?? "-")")
    for value in [r.receiptObject(requestDate: requestDate), r.report(requestDate: requestDate)] {
        let text = value.text()
        guard let parsed = try? JSONParser.parse(text) else { FuzzSupport.fail("receipt JSON does not parse") }
        if parsed.canonicalBytes() != value.canonicalBytes() { FuzzSupport.fail("receipt JSON changed on the way") }
        if value.text(pretty: true).count < text.count { FuzzSupport.fail("pretty text shorter than compact") }
    }
    let s = r.signature
    if s.valid {
        if s.failure != nil || s.root == nil { FuzzSupport.fail("a valid signature with a failure or no root") }
        switch r.format {
        case .appReceipt:
            if s.judgedAt == nil || s.judgedAt != r.app?.creationDate {
                FuzzSupport.fail("not judged at the creation date")
            }
            if s.digest != "sha1" && s.digest != "sha256" { FuzzSupport.fail("a digest outside the policy") }
        case .transactionReceipt:
            if s.judgedAt == nil || s.judgedAt != r.transaction?.purchaseDate {
                FuzzSupport.fail("not judged at the purchase date")
            }
            if s.digest != "sha1" { FuzzSupport.fail("a transaction receipt's digest other than SHA-1") }
        case .xcode:
            FuzzSupport.fail("an Xcode receipt authenticated")
        }
        if s.root == "extra", !r.isSandbox { FuzzSupport.fail("an extra root vouched for a production receipt") }
    } else if s.failure == nil {
        FuzzSupport.fail("an invalid signature without a failure")
    }
    if let id = r.lookupTransactionID {
        if r.format == .xcode { FuzzSupport.fail("a lookup id from an Xcode receipt") }
        if id.isEmpty || id.utf8.count > 32 || !id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            FuzzSupport.fail("a lookup id that is not digits")
        }
    }
    if (r.app == nil) == (r.transaction == nil) { FuzzSupport.fail("neither or both of app and transaction") }
    return r
}

/// A payload signed with the test chain and read with the test root as an extra root: authenticated exactly when
/// it is a sandbox receipt, not an Xcode one, made while the chain was valid (``withinTestChain(_:)``).
private func judgeSigned(_ r: DecodedReceipt) {
    guard let app = r.app else { FuzzSupport.fail("a signed payload read as no app receipt") }
    var expected = r.isSandbox && app.receiptType != "Xcode"
    if let created = app.creationDate {
        expected = expected && withinTestChain(created)
    } else {
        expected = false
    }
    if r.signature.valid != expected {
        FuzzSupport.fail(
            "signed payload: valid=\(r.signature.valid), expected \(expected) (\(r.signature.failure ?? "-"))"
        )
    }
}

/// A `purchase-info` signed with a test chain as a sandbox transaction receipt: authenticated exactly when the test
/// roots are trusted and it was bought while the chain was valid.
private func judgeSignedTransaction(_ r: DecodedReceipt, trusted: Bool) {
    guard let t = r.transaction, r.format == .transactionReceipt else {
        FuzzSupport.fail("a signed purchase-info read as no transaction receipt")
    }
    let expected = trusted && r.isSandbox && t.purchaseDate.map(withinTestChain) == true
    if r.signature.valid != expected {
        FuzzSupport.fail(
            "signed purchase-info: valid=\(r.signature.valid), expected \(expected) (\(r.signature.failure ?? "-"))"
        )
    }
}

/// `ms` (since the epoch) falls in the test chains' validity as OpenSSL judges it: whole seconds, from notBefore
/// up to but not including notAfter.
private func withinTestChain(_ ms: Int64) -> Bool {
    let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
    return seconds >= Setup.notBefore && seconds < Setup.notAfter
}

/// `IAPGW_FUZZ_DEBUG=1`: one line per input saying what the reader made of it (for checking seeds reach deep).
private func debug(_ line: @autoclosure () -> String) {
    if FuzzSupport.debugging { print(line()) }
}
