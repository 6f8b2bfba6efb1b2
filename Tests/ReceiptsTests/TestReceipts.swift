import Crypto
import Receipts
import TestPKI
import TestSupport

/// What the receipt tests share: the fixtures, RSA test PKIs made once per run (key generation is slow), and
/// receipts built and signed with them. Every time is fixed; nothing reads the clock.
enum TestReceipts {
    /// 2020-01-01 → 2040-01-01 (seconds): every generated PKI's validity.
    static let notBefore: Int64 = 1_577_836_800
    static let notAfter: Int64 = 2_208_988_800
    /// 2025-06-01T00:00:00Z (ms): the creation date of built receipts, and the request date of the goldens.
    static let june2025: Int64 = 1_748_736_000_000

    /// A test PKI (test names): the extra sandbox root of most tests.
    static let pki = generate(.test("iap-gateway Test"))
    /// A chain with Apple's own subject names and marker OIDs, and keys of its own: a look-alike.
    static let lookAlike = generate(.appleLookAlike)
    /// A chain whose leaf lacks Apple's leaf marker.
    static let noLeafMarker = generate(.test("iap-gateway No Leaf Marker"), leafMarker: false)
    /// A chain whose intermediate lacks Apple's intermediate marker.
    static let noIntermediateMarker = generate(.test("iap-gateway No WWDR Marker"), intermediateMarker: false)

    /// Version-2 transaction-receipt chains (``GeneratedReceiptPKI/Profile/iTunesStore``): test names; Apple's names
    /// with keys of its own.
    static let iTunes = generate(.test("iap-gateway Test iTunes"), profile: .iTunesStore)
    static let iTunesLookAlike = generate(.appleITunesStoreLookAlike, profile: .iTunesStore)

    static func generate(
        _ names: GeneratedReceiptPKI.Names,
        profile: GeneratedReceiptPKI.Profile = .appReceipt,
        leafMarker: Bool = true,
        intermediateMarker: Bool = true
    ) -> GeneratedReceiptPKI {
        do {
            return try GeneratedReceiptPKI.generate(
                notBefore: notBefore,
                notAfter: notAfter,
                names: names,
                profile: profile,
                leafMarker: leafMarker,
                intermediateMarker: intermediateMarker
            )
        } catch { fatalError("test PKI: \(error)") }
    }

    /// Apple's root only.
    static let apple = ReceiptTrust()
    /// Apple's root, and ``pki``'s as an extra sandbox root.
    static let withTestRoot = ReceiptTrust(extraSandboxRoots: [pki.root.der])
    /// Apple's root, and the roots of ``pki`` (version-3 transaction receipts) and ``iTunes`` (version 2) as extra
    /// sandbox roots, with their intermediates.
    static let withTestChains = ReceiptTrust(
        extraSandboxRoots: [pki.root.der, iTunes.root.der],
        extraIntermediates: [pki.intermediate.der, iTunes.intermediate.der]
    )

    /// The real receipts of `Fixtures/receipts` (their `.b64` names without the extension).
    static let names = [
        "apple-legacyTransaction", "apple-xcode-app-receipt-empty", "apple-xcode-app-receipt-with-transaction",
        "jackywu-legacy-transaction-receipt-production-2019", "revenuecat-legacy-transaction-receipt-sandbox-2015",
        "revenuecat-receiptsample1-sandbox-2020", "tpinappreceipt-receipt-production-2024",
    ]

    /// A fixture's text (`receipt-data` as a client sends it).
    static func text(_ name: String) throws -> [UInt8] { try Fixtures.bytes("receipts/\(name).b64") }

    /// A fixture's bytes once base64 is taken off.
    static func der(_ name: String) throws -> [UInt8] {
        try Base64.decode(try text(name), alphabet: .standard)
    }

    /// A small sandbox receipt with one subscription purchase, created 2025-06-01.
    static func sandboxReceipt(type: String = "ProductionSandbox", created: Int64? = june2025) -> AppReceipt {
        AppReceipt(
            receiptType: type,
            bundleID: "com.example.gateway",
            applicationVersion: "7",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            downloadID: 0,
            versionExternalIdentifier: 0,
            creationDate: created,
            originalPurchaseDate: 1_375_340_400_000,
            inApp: [
                ReceiptPurchase(
                    quantity: 1,
                    productID: "com.example.monthly",
                    transactionID: "2000000000000002",
                    originalTransactionID: "2000000000000001",
                    purchaseDate: june2025 - 60_000,
                    originalPurchaseDate: june2025 - 86_400_000,
                    expiresDate: june2025 + 2_592_000_000,
                    webOrderLineItemID: "2000000000000100",
                    isTrialPeriod: false,
                    isInIntroOfferPeriod: false,
                    productType: 3
                )
            ]
        )
    }

    /// The `purchase-info` of a sandbox subscription renewal bought at `purchased` (ms), in Apple's keys and order.
    static func purchaseFields(purchased: Int64? = june2025) -> [TransactionReceipt.PurchaseInfoField] {
        var fields: [(String, String)] = [
            ("original-purchase-date-ms", String(june2025 - 86_400_000)),
            ("unique-identifier", "0000000000000000000000000000000000000000"),
            ("original-transaction-id", "2000000000000001"),
            ("expires-date", String((purchased ?? june2025) + 2_592_000_000)),
            ("transaction-id", "2000000000000002"),
            ("web-order-line-item-id", "2000000000000100"),
            ("bvrs", "7"),
            ("item-id", "1000000001"),
            ("product-id", "com.example.monthly"),
            ("bid", "com.example.gateway"),
            ("quantity", "1"),
        ]
        if let purchased { fields.insert(("purchase-date-ms", String(purchased)), at: 1) }
        return fields.map { TransactionReceipt.PurchaseInfoField(key: $0.0, value: $0.1) }
    }

    /// A transaction receipt of ``purchaseFields(purchased:)`` signed with `pki` (version 2 for ``iTunes``, 3 for
    /// ``pki``), as `receipt-data` text.
    static func signedTransaction(
        purchased: Int64? = june2025,
        environment: String? = "Sandbox",
        by pki: GeneratedReceiptPKI = iTunes
    ) throws -> [UInt8] {
        let text = try ReceiptBuilder.transactionReceipt(
            purchaseFields(purchased: purchased),
            environment: environment,
            pki: pki
        )
        return Array(ReceiptBuilder.base64(text).utf8)
    }

    /// `receipt` signed with `pki`, as `receipt-data` text.
    static func signed(
        _ receipt: AppReceipt,
        by pki: GeneratedReceiptPKI = pki,
        digest: CMSDigest = .sha256
    ) throws -> [UInt8] {
        Array(ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki, digest: digest)).utf8)
    }

    /// The code of the `ReceiptError` reading `text` throws; nil when it reads.
    static func errorCode(
        _ text: [UInt8],
        trust: ReceiptTrust = apple,
        maxBytes: Int = ReceiptReader.defaultMaxBytes
    ) -> ReceiptError.Code? {
        do {
            _ = try ReceiptReader.read(text, trust: trust, maxBytes: maxBytes)
            return nil
        } catch {
            return error.code
        }
    }
}

/// The certificates a fixture receipt embeds (DER), through Crypto's own reader.
enum CMSCertificates {
    static func of(_ name: String) throws -> [[UInt8]] {
        try CMSSignedData(der: try TestReceipts.der(name)).certificates.map(\.der)
    }
}
