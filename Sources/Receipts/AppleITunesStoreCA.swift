internal import Crypto

/// Apple iTunes Store Certification Authority (`CN=Apple iTunes Store Certification Authority, OU=Apple Certification
/// Authority, O=Apple Inc., C=US`, RSA 2048, 2009-05-19 → 2016-05-18, issued by Apple Inc. Root): the issuer of the
/// `PurchaseReceiptCertificate` leaf that signs version-2 iOS 6 transaction receipts (docs/architecture.md, "The
/// receipt reader"). Their signature blob carries the leaf alone, so the intermediate is embedded here; it adds no
/// trust of its own: a chain through it must still validate to Apple Inc. Root.
/// Source: the 1,039 bytes Apple published as `iTS_intermediate_der` in its 2012 receipt-verification sample
/// (`VerificationController.m`); byte-identical to `Fixtures/receipts/AppleITunesStoreCertificationAuthority.cer`.
/// SHA-256 (DER): 447ad65484610f20fdc33804c8597a1e208fbe4ef9c5653485cc7d3df730c016 — checked when first used.
enum AppleITunesStoreCA {
    static let sha256Hex = "447ad65484610f20fdc33804c8597a1e208fbe4ef9c5653485cc7d3df730c016"

    static let der: [UInt8] = {
        let text = base64Lines.joined()
        // Both are compile-time constants checked by a test: a mismatch here is a build defect, not input.
        let bytes = try! Base64.decode(Array(text.utf8), alphabet: .standard)
        precondition(SHA256.hex(bytes) == sha256Hex, "embedded Apple iTunes Store CA is corrupt")
        return bytes
    }()

    private static let base64Lines: [String] = [
        "MIIECzCCAvOgAwIBAgIBGjANBgkqhkiG9w0BAQUFADBiMQswCQYDVQQGEwJVUzETMBEGA1UEChMKQXBwbGUgSW5jLjEmMCQGA1UE",
        "CxMdQXBwbGUgQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxFjAUBgNVBAMTDUFwcGxlIFJvb3QgQ0EwHhcNMDkwNTE5MTgzMTMwWhcN",
        "MTYwNTE4MTgzMTMwWjB/MQswCQYDVQQGEwJVUzETMBEGA1UECgwKQXBwbGUgSW5jLjEmMCQGA1UECwwdQXBwbGUgQ2VydGlmaWNh",
        "dGlvbiBBdXRob3JpdHkxMzAxBgNVBAMMKkFwcGxlIGlUdW5lcyBTdG9yZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTCCASIwDQYJ",
        "KoZIhvcNAQEBBQADggEPADCCAQoCggEBAKS8rzKUQz4LvDeHzWOJ8szZviBNWrT+h2fSmt4aVJ2i89+H5EzLkxF4oDCPNEHB075m",
        "bUdsmLjsetXJ3aXk6sZw9DXQkfez2AoRmas6Yjq9e/RWT9ufJJNRUHwg1WZNZvMYpBOWIhb9Maf0OWab+2JpXEuflKhL6OxbZFoY",
        "eYoWdWNCpEnZjDPerXvWOQT04p0KaYzrSxIoSzRIB5sOWfkfYrADnza4TqPTdVnU8zoFysUzO/jABgkIk9vnTb8R81IspRY1FfNB",
        "As0C0fz1+MWEvWNqhta2mfaGrl/9A9Qoilpdr7xldNH3GsOSCPQcrWnoAkwOlRUHvL5qb8GzraECAwEAAaOBrjCBqzAOBgNVHQ8B",
        "Af8EBAMCAYYwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHQ4EFgQUNh3o4p2C0gEYtTJrDtdDC5FYQzowHwYDVR0jBBgwFoAUK9BpR5R2",
        "Cf70a40uQKb3R01/CF4wNgYDVR0fBC8wLTAroCmgJ4YlaHR0cDovL3d3dy5hcHBsZS5jb20vYXBwbGVjYS9yb290LmNybDAQBgoq",
        "hkiG92NkBgICBAIFADANBgkqhkiG9w0BAQUFAAOCAQEAdaaQ5pqn22VwpgmTbwjfLNvpKI1AG1deoOr07BNlG3FKTdyASE/y5an7",
        "hWy3Hp3b9BhIEHkX6sM9h9i0eW0UUK3Svz1O/A3ixQOUdYBzTaWhkf4c3hUXrIlxKm8PZwrTnDChaPvPcBfK2UD8+Bu/zrDErvRK",
        "LamZhwZCCYYiaoRAOfS7rFYY95ocAYFcjG5B8l0ZLBccSUbZHH6TEhPIZ5nC6oPjoowOuDsq3xy/S4tvGrjul2dK2Kuvi6TaXIce",
        "ILjF87HEmKI3+J7GmmulrfZ4lg6CjwRGHLKl/ZowUSj9UgQVA9U8rf72eODqNe9ltSF226Tvy3LvVGsBDcfdGg==",
    ]
}
