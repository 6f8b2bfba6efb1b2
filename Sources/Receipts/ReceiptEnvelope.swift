/// The PKCS#7 envelope of an app receipt as Apple writes it — the parts its signature does not cover (docs/architecture.md,
/// "The receipt reader"). Without signed attributes, an RSA signature covers the content alone: a changed SignedData
/// version, a second digest algorithm, parameters other than NULL, an unsigned attribute or a CRL would not break it.
/// The policy refuses them all, so that no byte of an authenticated receipt can change unnoticed:
///
/// ```text
/// ContentInfo { signedData, [0] SignedData {
///     version 1, digestAlgorithms SET { <the signer's digest> },
///     encapContentInfo { data, [0] OCTET STRING },
///     [0] certificates (plain X.509 only), no [1] crls,
///     signerInfos SET { SignerInfo { version 1, issuerAndSerialNumber, digestAlgorithm (the same bytes as above),
///         [0] signedAttrs (optional), rsaEncryption, signature, no [1] unsignedAttrs } } } }
/// ```
///
/// Algorithm parameters must be absent or NULL. Read with the module's own ``BER`` reader over bytes
/// ``BER/validate(_:)`` has already passed.
enum ReceiptEnvelope {
    /// DER of 1.2.840.113549.1.1.1, the signature algorithm Apple's receipts name (the digest is the signer's).
    static let rsaEncryptionOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]

    /// Why `b` is not such an envelope, signed by the certificate `leaf` (DER) that its SignerInfo must name byte for
    /// byte (the issuer name and serial number exactly as the certificate encodes them: OpenSSL finds a signer by
    /// names compared loosely, case and string type aside); nil when it is.
    static func problem(_ b: [UInt8], leaf: [UInt8]) -> String? {
        do { return try check(b, leaf: leaf) } catch { return "unreadable: \(error.reason)" }
    }

    /// The contents of `IssuerAndSerialNumber` for the certificate `der`: its issuer Name and serialNumber elements.
    static func issuerAndSerial(_ der: [UInt8]) throws(ReceiptError) -> ArraySlice<UInt8>? {
        let certificate = try BER.element(der, at: 0, limit: der.count, depth: 0)
        guard let tbs = try BER.children(der, of: certificate, depth: 0).first else { return nil }
        var fields = try BER.children(der, of: tbs, depth: 1)[...]
        if fields.first?.identifier == 0xA0 { fields.removeFirst() }  // [0] version
        guard fields.count >= 3 else { return nil }
        let serial = fields[fields.startIndex]
        let issuer = fields[fields.startIndex + 2]
        guard serial.identifier == BER.Tag.integer, issuer.identifier == BER.Tag.sequence else { return nil }
        return der[issuer.bytes] + der[serial.bytes]
    }

    private static func check(_ b: [UInt8], leaf: [UInt8]) throws(ReceiptError) -> String? {
        func kids(_ e: BER.Element, _ depth: Int) throws(ReceiptError) -> [BER.Element] {
            try BER.children(b, of: e, depth: depth)
        }
        func integer(_ e: BER.Element) -> Int64? {
            e.identifier == BER.Tag.integer ? BER.int64(b[e.contents]) : nil
        }
        /// `SEQUENCE { OID }` or `SEQUENCE { OID, NULL }`.
        func plainAlgorithm(_ e: BER.Element, _ depth: Int) throws(ReceiptError) -> Bool {
            guard e.identifier == BER.Tag.sequence else { return false }
            let parts = try kids(e, depth)
            guard let oid = parts.first, oid.identifier == BER.Tag.objectIdentifier else { return false }
            switch parts.count {
            case 1: return true
            case 2: return parts[1].identifier == 0x05 && parts[1].header.length == 0
            default: return false
            }
        }
        let top = try BER.element(b, at: 0, limit: b.count, depth: 0)
        let info = try kids(top, 0)
        guard info.count == 2, info[1].identifier == 0xA0 else { return "ContentInfo is not { signedData, [0] }" }
        let wrapped = try kids(info[1], 1)
        guard wrapped.count == 1, wrapped[0].identifier == BER.Tag.sequence else { return "[0] holds no SignedData" }
        let sd = try kids(wrapped[0], 2)
        guard sd.count >= 4, integer(sd[0]) == 1 else { return "SignedData version is not 1" }
        guard sd[1].identifier == BER.Tag.set else { return "no digestAlgorithms" }
        let digests = try kids(sd[1], 3)
        guard digests.count == 1, try plainAlgorithm(digests[0], 4) else {
            return "digestAlgorithms is not one plain algorithm"
        }
        guard let signerInfos = sd.last, signerInfos.identifier == BER.Tag.set else { return "no signerInfos" }
        for e in sd[3..<(sd.count - 1)] {
            guard e.identifier == 0xA0 else { return "a CRL or an unknown field in SignedData" }
            guard try kids(e, 3).allSatisfy({ $0.identifier == BER.Tag.sequence }) else {
                return "a certificate other than X.509"
            }
        }
        let signers = try kids(signerInfos, 3)
        guard signers.count == 1, signers[0].identifier == BER.Tag.sequence else { return "not one SignerInfo" }
        var si = try kids(signers[0], 4)[...]
        guard let version = si.popFirst(), integer(version) == 1 else { return "SignerInfo version is not 1" }
        guard let sid = si.popFirst(), sid.identifier == BER.Tag.sequence,
            let expected = try issuerAndSerial(leaf), b[sid.contents].elementsEqual(expected)
        else { return "the signer is not named by its certificate's exact issuer and serial number" }
        guard let digest = si.popFirst(), try plainAlgorithm(digest, 5),
            b[digest.bytes].elementsEqual(b[digests[0].bytes])
        else { return "the signer's digest algorithm differs from digestAlgorithms" }
        if si.first?.identifier == 0xA0 { si.removeFirst() }  // signed attributes: covered by the signature
        guard let signature = si.popFirst(), try plainAlgorithm(signature, 5),
            let oid = try kids(signature, 5).first, b[oid.bytes].elementsEqual(rsaEncryptionOID)
        else { return "the signature algorithm is not rsaEncryption without parameters" }
        guard let value = si.popFirst(), value.identifier == BER.Tag.octetString, si.isEmpty else {
            return "unsigned attributes or unknown fields after the signature"
        }
        return nil
    }
}
