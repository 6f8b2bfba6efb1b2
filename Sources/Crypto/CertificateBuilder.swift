internal import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// The distinguished name of a built certificate, written in one of the two orders Apple's certificates use:
/// `CN, OU, O, C` (its leaves and newer intermediates) or `C, O, OU, CN` (Apple Root CA, the first WWDR
/// intermediate). CN as UTF8String, C as a two-letter PrintableString.
public struct CertificateSubject: Sendable, Hashable {
    /// The order of the name's attributes in the encoding (names compare by encoding, so a look-alike of an Apple
    /// name needs Apple's order).
    public enum Order: Sendable, Hashable {
        /// `CN, OU, O, C`.
        case commonNameFirst
        /// `C, O, OU, CN`.
        case countryFirst
    }

    public var commonName: String
    public var organizationalUnit: String?
    public var organization: String?
    /// ISO 3166 two-letter code.
    public var country: String?
    public var order: Order

    public init(
        commonName: String,
        organizationalUnit: String? = nil,
        organization: String? = nil,
        country: String? = nil,
        order: Order = .commonNameFirst
    ) {
        (self.commonName, self.organizationalUnit, self.organization, self.country) =
            (commonName, organizationalUnit, organization, country)
        self.order = order
    }
}

/// One X.509 v3 extension: dotted OID, criticality and the DER of its value (the contents of `extnValue`).
public struct CertificateExtension: Sendable, Hashable {
    public var oid: String
    public var critical: Bool
    public var derValue: [UInt8]

    public init(oid: String, critical: Bool, derValue: [UInt8]) {
        (self.oid, self.critical, self.derValue) = (oid, critical, derValue)
    }
}

/// Builds and signs X.509 v3 certificates (ECDSA with SHA-384, as Apple's App Store chain is signed; or with an RSA
/// issuer key, RSA PKCS#1 v1.5 as Apple's receipt chain is): the test and simulator PKI. Never used to verify
/// anything; the product's trust decisions stay in ``X509TrustStore``.
public enum CertificateBuilder {
    /// The digest of the issuer's signature: SHA-384 (`ecdsa-with-SHA384` / `sha384WithRSAEncryption`), or SHA-256
    /// (`sha256WithRSAEncryption`, as Apple signs its receipt certificates today).
    public enum SignatureDigest: Sendable, Hashable {
        case sha256
        case sha384
    }

    /// Builds one certificate for `subject` and the public half of `key`.
    ///
    /// - `issuer`: the signing CA's certificate and key; `nil` makes a self-signed certificate signed with `key`.
    /// - Validity is `notBefore ..< notAfter` in seconds since the epoch, encoded exactly (UTCTime until 2049,
    ///   GeneralizedTime after), within the years 1950 to 9999.
    /// - Extensions, in this order: basicConstraints (critical; `CA:TRUE` with the optional `pathLength`, or
    ///   `CA:FALSE`), keyUsage (critical; keyCertSign + cRLSign for a CA, digitalSignature otherwise),
    ///   subjectKeyIdentifier (SHA-1 of the key), authorityKeyIdentifier (keyid of the issuer; not on self-signed
    ///   certificates), then `extensions` as given. Each custom value must be one complete DER element.
    /// - The serial number is 16 random bytes with the top bit cleared (positive, at most 128 bits).
    /// - The issuer is not judged (a non-CA issuer is allowed: negative tests need such chains); only its key must
    ///   match its certificate.
    /// - `signatureDigest`: SHA-384 unless asked otherwise; any key kind (EC or RSA) signs with it.
    public static func make(
        subject: CertificateSubject,
        issuer: (certificate: X509Certificate, key: PrivateKey)?,
        key: PrivateKey,
        notBefore: Int64,
        notAfter: Int64,
        isCA: Bool,
        pathLength: Int? = nil,
        extensions: [CertificateExtension] = [],
        signatureDigest: SignatureDigest = .sha384
    ) throws(CryptoError) -> X509Certificate {
        guard notAfter > notBefore else { throw CryptoError(.invalidArgument, "notAfter is not after notBefore") }
        guard notBefore >= earliestTime, notAfter <= latestTime else {
            throw CryptoError(.invalidArgument, "validity outside the years 1950 to 9999 (RFC 5280 §4.1.2.5)")
        }
        if let pathLength {
            guard isCA else { throw CryptoError(.invalidArgument, "a path length needs CA:TRUE") }
            guard pathLength >= 0 else { throw CryptoError(.invalidArgument, "negative path length") }
        }
        let signingKey = issuer?.key ?? key
        defer { ERR_clear_error() }
        if let issuer {
            let matches = withExtendedLifetime(issuer) {
                X509_check_private_key(issuer.certificate.x509, issuer.key.pkey) == 1
            }
            guard matches else { throw CryptoError(.invalidKey, "issuer key does not match the issuer certificate") }
        }

        guard let x = X509_new() else { throw CryptoError(.internalFailure, "X509_new") }
        defer { X509_free(x) }
        guard X509_set_version(x, Int(X509_VERSION_3)) == 1 else {
            throw CryptoError(.internalFailure, "X509_set_version")
        }
        try setRandomSerial(x)

        let name = try makeName(subject)
        defer { X509_NAME_free(name) }
        guard X509_set_subject_name(x, name) == 1 else { throw CryptoError(.internalFailure, "X509_set_subject_name") }
        let issuerNameSet = withExtendedLifetime(issuer) {
            X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.certificate.x509) } ?? name)
        }
        guard issuerNameSet == 1 else { throw CryptoError(.internalFailure, "X509_set_issuer_name") }

        guard ASN1_TIME_set(X509_getm_notBefore(x), time_t(notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x), time_t(notAfter)) != nil
        else { throw CryptoError(.invalidArgument, "validity not encodable: \(CryptoError.drainOpenSSLErrors())") }

        guard withExtendedLifetime(key, { X509_set_pubkey(x, key.pkey) }) == 1 else {
            throw CryptoError(.invalidKey, "X509_set_pubkey: \(CryptoError.drainOpenSSLErrors())")
        }

        // Standard extensions through OpenSSL's own encoders (the `openssl x509 -extfile` syntax).
        var standard: [(Int32, String)] = [
            (
                NID_basic_constraints,
                isCA ? "critical,CA:TRUE" + (pathLength.map { ",pathlen:\($0)" } ?? "") : "critical,CA:FALSE"
            ),
            (NID_key_usage, isCA ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"),
            (NID_subject_key_identifier, "hash"),
        ]
        if issuer != nil { standard.append((NID_authority_key_identifier, "keyid")) }
        try withExtendedLifetime(issuer) { () throws(CryptoError) in
            var ctx = X509V3_CTX()  // zeroed: no config database (X509V3_set_ctx_nodb)
            X509V3_set_ctx(&ctx, issuer?.certificate.x509 ?? x, x, nil, nil, 0)
            for (nid, value) in standard {
                guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                    throw CryptoError(.internalFailure, "extension \(value): \(CryptoError.drainOpenSSLErrors())")
                }
                defer { X509_EXTENSION_free(ext) }
                guard X509_add_ext(x, ext, -1) == 1 else { throw CryptoError(.internalFailure, "X509_add_ext") }
            }
        }
        for e in extensions { try addCustomExtension(x, e) }

        let md = signatureDigest == .sha256 ? EVP_sha256() : EVP_sha384()
        let signed = withExtendedLifetime(signingKey) { X509_sign(x, signingKey.pkey, md) }
        guard signed > 0 else { throw CryptoError(.invalidKey, "X509_sign: \(CryptoError.drainOpenSSLErrors())") }

        let n = i2d_X509(x, nil)
        guard n > 0 else { throw CryptoError(.internalFailure, "i2d_X509: \(CryptoError.drainOpenSSLErrors())") }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_X509(x, &p)
        }
        // Re-parsing gives the immutable, cache-populated object every other certificate in the module is.
        return try X509Certificate(der: der)
    }

    /// 1950-01-01T00:00:00Z, the first UTCTime instant; 9999-12-31T23:59:59Z, the last GeneralizedTime one.
    static let earliestTime: Int64 = -631_152_000
    static let latestTime: Int64 = 253_402_300_799

    private static func setRandomSerial(_ x: OpaquePointer) throws(CryptoError) {
        var bytes: [UInt8]
        repeat {
            bytes = Bytes.random(count: 16)
            bytes[0] &= 0x7F  // positive as a DER INTEGER
        } while bytes.allSatisfy { $0 == 0 }  // RFC 5280 §4.1.2.2: non-zero
        guard let bn = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw CryptoError(.internalFailure, "BN_bin2bn")
        }
        defer { BN_free(bn) }
        guard BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nil else {
            throw CryptoError(.internalFailure, "BN_to_ASN1_INTEGER")
        }
    }

    private static func makeName(_ subject: CertificateSubject) throws(CryptoError) -> OpaquePointer {
        guard let name = X509_NAME_new() else { throw CryptoError(.internalFailure, "X509_NAME_new") }
        var entries: [(Int32, String, String?)] = [
            (NID_commonName, "commonName", subject.commonName),
            (NID_organizationalUnitName, "organizationalUnit", subject.organizationalUnit),
            (NID_organizationName, "organization", subject.organization),
            (NID_countryName, "country", subject.country),
        ]
        if subject.order == .countryFirst { entries.reverse() }
        for (nid, field, value) in entries {
            guard let value else { continue }
            let bytes = Array(value.utf8)
            guard !bytes.isEmpty else {
                X509_NAME_free(name)
                throw CryptoError(.invalidArgument, "\(field) is empty")
            }
            // OpenSSL's string table picks the type and checks the size: UTF8String for names, PrintableString of
            // exactly two characters for the country.
            let ok = bytes.withUnsafeBufferPointer {
                X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8, $0.baseAddress, Int32($0.count), -1, 0) == 1
            }
            guard ok else {
                X509_NAME_free(name)
                throw CryptoError(.invalidArgument, "\(field) not encodable: \(CryptoError.drainOpenSSLErrors())")
            }
        }
        return name
    }

    private static func addCustomExtension(_ x: OpaquePointer, _ e: CertificateExtension) throws(CryptoError) {
        guard isSingleDERElement(e.derValue) else {
            throw CryptoError(.invalidArgument, "value of \(e.oid) is not one complete DER element")
        }
        guard let obj = OBJ_txt2obj(e.oid, 1) else {
            throw CryptoError(.invalidArgument, "\(e.oid) is not a dotted OID")
        }
        defer { ASN1_OBJECT_free(obj) }
        // X.509 allows each extension once; OpenSSL marks a certificate with duplicates invalid.
        guard X509_get_ext_by_OBJ(x, obj, -1) < 0 else {
            throw CryptoError(.invalidArgument, "duplicate extension \(e.oid)")
        }
        guard let octets = ASN1_OCTET_STRING_new() else { throw CryptoError(.internalFailure, "ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard
            e.derValue.withUnsafeBufferPointer({ ASN1_OCTET_STRING_set(octets, $0.baseAddress, Int32($0.count)) }) == 1
        else {
            throw CryptoError(.internalFailure, "ASN1_OCTET_STRING_set")
        }
        guard let ext = X509_EXTENSION_create_by_OBJ(nil, obj, e.critical ? 1 : 0, octets) else {
            throw CryptoError(.internalFailure, "X509_EXTENSION_create_by_OBJ")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x, ext, -1) == 1 else { throw CryptoError(.internalFailure, "X509_add_ext") }
    }

    /// True when `bytes` is exactly one definite-length BER/DER element (tag, length, contents, nothing after).
    static func isSingleDERElement(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return false }
        return bytes.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return false }
            var p: UnsafePointer<UInt8>? = base
            var length = 0
            var tag: Int32 = 0
            var tagClass: Int32 = 0
            let rc = ASN1_get_object(&p, &length, &tag, &tagClass, buf.count)
            // 0x80: error; bit 0: indefinite length (not DER).
            guard rc & 0x80 == 0, rc & 0x01 == 0, let p else { return false }
            return (p - base) + length == buf.count
        }
    }
}
