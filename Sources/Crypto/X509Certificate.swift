internal import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// A parsed X.509 certificate (`X509*`). Read-only after parsing; OpenSSL permits concurrent reads of one `X509`,
/// and this type only reads — hence `@unchecked Sendable`.
public final class X509Certificate: @unchecked Sendable {
    let x509: OpaquePointer
    /// The exact DER bytes the certificate was parsed from.
    public let der: [UInt8]

    /// Parses DER. Trailing bytes after the certificate are rejected.
    public init(der: [UInt8]) throws(CryptoError) {
        var consumed = 0
        let cert: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return nil }
            var p: UnsafePointer<UInt8>? = base
            let c = d2i_X509(nil, &p, buf.count)
            consumed = p.map { $0 - base } ?? 0
            return c
        }
        ERR_clear_error()
        guard let cert else { throw CryptoError(.invalidCertificate, "not a DER X.509 certificate") }
        guard consumed == der.count else {
            X509_free(cert)
            throw CryptoError(.invalidCertificate, "trailing bytes after the certificate")
        }
        self.x509 = cert
        self.der = der
        // Populate OpenSSL's lazily computed extension cache now, while no other thread can see the object.
        _ = X509_get_extension_flags(cert)
    }

    /// Takes over one reference to `cert` (a certificate OpenSSL parsed inside another structure, such as a CMS
    /// SignedData's certificate bag), without parsing it again; ``der`` is its encoding as OpenSSL holds it.
    init(taking cert: OpaquePointer) throws(CryptoError) {
        let n = i2d_X509(cert, nil)
        guard n > 0 else {
            ERR_clear_error()
            X509_free(cert)
            throw CryptoError(.invalidCertificate, "certificate does not encode")
        }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_X509(cert, &p)
        }
        self.x509 = cert
        self.der = der
        _ = X509_get_extension_flags(cert)
    }

    deinit { X509_free(x509) }

    /// Start of validity, seconds since the epoch.
    public var notBefore: Int64? { Self.seconds(X509_get0_notBefore(x509)) }
    /// End of validity, seconds since the epoch.
    public var notAfter: Int64? { Self.seconds(X509_get0_notAfter(x509)) }

    private static func seconds(_ t: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let t else { return nil }
        var tm = tm()
        guard ASN1_TIME_to_tm(t, &tm) == 1 else { return nil }
        return Int64(timegm(&tm))
    }

    /// Serial number as lower-case hex in whole bytes, as `openssl x509 -serial` prints it (for the log line).
    public var serialNumberHex: String {
        guard let serial = X509_get0_serialNumber(x509), let bn = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { gateway_openssl_free(hex) }
        return String(cString: hex).lowercased()
    }

    /// The subject as a one-line RFC 2253 string.
    public var subject: String { Self.rfc2253(X509_get_subject_name(x509)) }

    /// The subject's (last) common name, nil when it has none or it does not decode as UTF-8.
    public var commonName: String? {
        guard let name = X509_get_subject_name(x509) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0 else { return nil }
        var last = index
        while true {
            let next = X509_NAME_get_index_by_NID(name, NID_commonName, last)
            if next < 0 { break }
            last = next
        }
        guard let entry = X509_NAME_get_entry(name, last), let data = X509_NAME_ENTRY_get_data(entry) else {
            return nil
        }
        var utf8: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&utf8, data)
        guard n >= 0, let utf8 else {
            ERR_clear_error()
            return nil
        }
        defer { gateway_openssl_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(n)), as: UTF8.self)
    }

    /// True when the subject and issuer names are equal (a self-issued certificate, such as a root).
    public var isSelfIssued: Bool { X509_NAME_cmp(X509_get_subject_name(x509), X509_get_issuer_name(x509)) == 0 }

    /// True when this certificate's issuer name equals `other`'s subject name (X.509 name comparison).
    public func isIssued(byName other: X509Certificate) -> Bool {
        withExtendedLifetime(other) {
            X509_NAME_cmp(X509_get_issuer_name(x509), X509_get_subject_name(other.x509)) == 0
        }
    }

    /// The issuer as a one-line RFC 2253 string (equal to the issuing certificate's ``subject``).
    public var issuer: String { Self.rfc2253(X509_get_issuer_name(x509)) }

    private static func rfc2253(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, gateway_xn_flag_rfc2253()) >= 0 else { return "" }
        var ptr: UnsafeMutablePointer<CChar>?
        let n = gateway_bio_get_mem_data(bio, &ptr)
        guard n > 0, let ptr else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: ptr, count: n), as: UTF8.self)
    }

    /// True when an extension with the dotted `oid` is present (any criticality, any value).
    public func hasExtension(oid: String) -> Bool {
        guard let obj = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(obj) }
        return X509_get_ext_by_OBJ(x509, obj, -1) >= 0
    }

    /// True when basicConstraints says `CA:TRUE`.
    public var isCA: Bool { X509_get_extension_flags(x509) & UInt32(EXFLAG_CA) != 0 }

    /// The subject public key.
    public func publicKey() throws(CryptoError) -> PublicKey {
        guard let key = X509_get_pubkey(x509) else {
            throw CryptoError(.invalidKey, "certificate public key unreadable")
        }
        return PublicKey(owning: key)
    }

    /// Reads a PEM file's first certificate (tests, operator-supplied roots).
    public convenience init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let cert: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            // OpenSSL takes an `int` length: text past 2 GiB is no certificate, and must not trap the conversion.
            guard let length = Int32(exactly: buf.count), let bio = BIO_new_mem_buf(buf.baseAddress, length) else {
                return nil
            }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let cert else { throw CryptoError(.invalidCertificate, "not a PEM certificate") }
        defer { X509_free(cert) }
        let n = i2d_X509(cert, nil)
        guard n > 0 else { throw CryptoError(.invalidCertificate, "certificate does not re-encode") }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_X509(cert, &p)
        }
        try self.init(der: der)
    }

    /// Every extension in certificate order, with dotted OIDs (what `openssl x509 -text` lists, undecoded).
    public var extensions: [CertificateExtension] {
        let count = X509_get_ext_count(x509)
        guard count > 0 else { return [] }
        var out: [CertificateExtension] = []
        for i in 0..<count {
            guard let ext = X509_get_ext(x509, i), let obj = X509_EXTENSION_get_object(ext) else { continue }
            var text = [CChar](repeating: 0, count: 128)
            let n = OBJ_obj2txt(&text, Int32(text.count), obj, 1)
            guard n > 0, Int(n) < text.count else { continue }
            let oid = String(decoding: text.prefix(Int(n)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var value: [UInt8] = []
            if let data = X509_EXTENSION_get_data(ext), let bytes = ASN1_STRING_get0_data(data) {
                value = Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
            }
            out.append(CertificateExtension(oid: oid, critical: X509_EXTENSION_get_critical(ext) != 0, derValue: value))
        }
        return out
    }

    /// The certificate as PEM text (`-----BEGIN CERTIFICATE-----`, base64 of ``der`` in 64-character lines).
    public var pem: String {
        let body = Array(Base64.encode(der, alphabet: .standard).utf8)
        var lines: [String] = ["-----BEGIN CERTIFICATE-----"]
        var i = 0
        while i < body.count {
            lines.append(String(decoding: body[i..<min(i + 64, body.count)], as: UTF8.self))
            i += 64
        }
        lines.append("-----END CERTIFICATE-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
