internal import Crypto

/// Reads what a client sends as verifyReceipt's `receipt-data` (docs/architecture.md, "The receipt reader"):
/// normalises the base64 (``ReceiptInput``), tells the format apart, reads the receipt, and judges its signature
/// (``ReceiptSignaturePolicy``, ``TransactionReceiptSignaturePolicy``). No network, no store, no clock: the chain is
/// judged at the receipt's own creation date (a transaction receipt's: its purchase date).
///
/// | input | result |
/// |---|---|
/// | base64 of a PKCS#7 SignedData (`MI…`) | an app receipt, or `xcode` (StoreKit testing) |
/// | base64 of an old-style property list with `purchase-info` (`ew…`) | a transaction receipt (iOS 6) |
/// | a compact JWS (`eyJ…`) | throws `storeKit2JWS` |
/// | anything else | throws `empty`, `malformed`, `notAReceipt`, `tooLarge` or `tooDeep` |
///
/// A receipt whose signature fails is returned with ``ReceiptSignature/valid`` false; only bytes that are not a
/// readable receipt throw. Bounded on any input: the decoded size by `maxBytes`, BER nesting by ``maxDepth``, time
/// linear in the size (times the nesting depth).
public enum ReceiptReader {
    /// 4 MiB of decoded receipt. Apple's receipts grow by about 400 bytes per purchase they list (a long-lived
    /// subscription renewing monthly for ten years lists about 120); the largest seen in public samples are around
    /// 100 KB. 4 MiB is forty times that — room for ten thousand purchases — while keeping the worst case at about
    /// 60 ms of reading (docs/performance.md, `bench receipts`). The endpoint caps the request body separately.
    public static let defaultMaxBytes = 4 * 1024 * 1024

    /// BER nesting accepted anywhere in a receipt (``BER/maxDepth``): Apple's nest ten levels.
    public static var maxDepth: Int { BER.maxDepth }

    /// Reads `text` (`receipt-data`: base64 in any spelling ``ReceiptInput`` accepts) with the roots of `trust`.
    public static func read(
        _ text: some Collection<UInt8>,
        trust: ReceiptTrust,
        maxBytes: Int = defaultMaxBytes
    ) throws(ReceiptError) -> DecodedReceipt {
        switch try ReceiptInput.decode(text, maxBytes: maxBytes) {
        case .storeKit2JWS:
            throw ReceiptError(.storeKit2JWS, "a StoreKit 2 signed transaction (JWS), not a receipt")
        case .bytes(let bytes):
            return try read(decoded: bytes, trust: trust, maxBytes: maxBytes)
        }
    }

    /// Reads a receipt's bytes as they are once base64 is taken off: the DER of an app receipt (the
    /// `appStoreReceiptURL` file of a device or of Xcode), or the property-list text of a transaction receipt.
    public static func read(
        decoded bytes: [UInt8],
        trust: ReceiptTrust,
        maxBytes: Int = defaultMaxBytes
    ) throws(ReceiptError) -> DecodedReceipt {
        guard !bytes.isEmpty else { throw ReceiptError(.empty, "no receipt data") }
        guard bytes.count <= maxBytes else { throw ReceiptError(.tooLarge, "more than \(maxBytes) bytes") }
        if bytes[0] == BER.Tag.sequence { return try appReceipt(bytes, trust: trust) }
        if let first = bytes.first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }), first == 0x7B {
            return try transactionReceipt(bytes, trust: trust)
        }
        throw ReceiptError(.notAReceipt, "neither a PKCS#7 app receipt nor a transaction receipt")
    }

    /// DER of the OID 1.2.840.113549.1.7.2 (signedData): the first element of every app receipt.
    static let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]

    static func appReceipt(_ bytes: [UInt8], trust: ReceiptTrust) throws(ReceiptError) -> DecodedReceipt {
        // Our own walk first: nesting bombs and broken lengths stop here, before OpenSSL sees the bytes.
        try BER.validate(bytes)
        let top = try BER.element(bytes, at: 0, limit: bytes.count, depth: 0)
        let first = try BER.children(bytes, of: top, depth: 0).first
        guard let first, first.identifier == BER.Tag.objectIdentifier,
            bytes[top.header.contentStart..<first.end].elementsEqual(signedDataOID)
        else { throw ReceiptError(.notAReceipt, "a DER structure that is not a PKCS#7 SignedData") }
        let cms: CMSSignedData
        do { cms = try CMSSignedData(der: bytes) } catch {
            throw ReceiptError(.malformed, "PKCS#7 container: \(error.reason)")
        }
        let receipt = try ReceiptPayload.parse(cms.content)
        let signature = ReceiptSignaturePolicy.judge(cms, der: bytes, receipt: receipt, trust: trust)
        let xcode =
            receipt.receiptType == "Xcode"
            || cms.certificates.contains { ReceiptSignaturePolicy.isXcode(receipt: receipt, signer: $0) }
        return DecodedReceipt(
            format: xcode ? .xcode : .appReceipt,
            signature: signature,
            app: receipt,
            isSandbox: receipt.isSandbox,
            lookupTransactionID: xcode ? nil : DecodedReceipt.lookupID(receipt.inApp)
        )
    }
}
