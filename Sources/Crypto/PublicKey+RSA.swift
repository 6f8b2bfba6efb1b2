internal import COpenSSL

extension PublicKey {
    /// The modulus size in bits of an RSA key; nil for any other key.
    public var rsaBits: Int? {
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA else { return nil }
        return Int(EVP_PKEY_get_bits(pkey))
    }

    /// Verifies an RSA PKCS#1 v1.5 signature with SHA-1 over `message` (`sha1WithRSAEncryption`): the signature of
    /// an iOS 6 transaction receipt (docs/architecture.md, "The receipt reader"). False — never an error — for a key
    /// that is not RSA, a signature whose length is not the modulus's, or one that does not verify.
    public func verifyRSASHA1(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let bits = rsaBits, signature.count == (bits + 7) / 8 else { return false }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(md)
            ERR_clear_error()
        }
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(md, &pctx, EVP_sha1(), nil, pkey) == 1, let pctx,
            EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1
        else { return false }
        let rc = signature.withUnsafeBufferPointer { s in
            message.withUnsafeBufferPointer { m in EVP_DigestVerify(md, s.baseAddress, s.count, m.baseAddress, m.count)
            }
        }
        return rc == 1
    }
}
