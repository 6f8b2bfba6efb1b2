internal import Crypto
public import Receipts
internal import TestPKI

/// The app receipts the simulated App Store issues (docs/simulator.md): real PKCS#7 receipts with Apple's attributes,
/// signed by the simulator's receipt chain (``SimulatorPKI/receiptLeaf``, under `receipt-root.der`), so that the fake
/// verifyReceipt and the gateway's receipt path read the same bytes.
extension SimSubscription {
    /// The receipt the customer's device holds at `createdAt`: every transaction of the subscription made by then as
    /// an in-app purchase, in the shape of a sandbox receipt (`ProductionSandbox`, app item 0, original purchase
    /// 2013-08-01 as Apple's sandbox has it).
    public func appReceipt(createdAt: Int64) -> AppReceipt {
        let purchases = transactions.filter { $0.purchaseDate <= createdAt }.map { t in
            ReceiptPurchase(
                quantity: Int64(t.seats ?? 1),
                productID: t.productID,
                transactionID: t.transactionID,
                originalTransactionID: t.originalTransactionID,
                purchaseDate: t.purchaseDate,
                originalPurchaseDate: t.originalPurchaseDate,
                expiresDate: t.expiresDate,
                cancellationDate: t.revocationDate,
                webOrderLineItemID: t.webOrderLineItemID,
                isTrialPeriod: t.isTrial,
                isInIntroOfferPeriod: t.isIntro && !t.isTrial,
                promotionalOfferID: t.offerType == 2 ? t.offerID : nil,
                productType: Self.receiptProductType(t)
            )
        }
        return AppReceipt(
            receiptType: "ProductionSandbox",
            bundleID: bundleID,
            applicationVersion: "1",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            downloadID: 0,
            versionExternalIdentifier: 0,
            creationDate: createdAt,
            originalPurchaseDate: 1_375_340_400_000,
            inApp: purchases
        )
    }

    /// Attribute 1707: 3 auto-renewable, 1 consumable, 0 non-consumable.
    static func receiptProductType(_ t: SimTransaction) -> Int {
        if t.expiresDate != nil { return 3 }
        return Catalogue.product(t.productID)?.kind == .consumable ? 1 : 0
    }
}

/// What signs the simulator's app receipts: the leaf of its receipt chain and its key, with the intermediate and the
/// root embedded after the leaf as Apple's receipts have them. The ``Emitter`` holds one to give its V1 bodies a real
/// `latest_receipt`; the fake verifyReceipt signs its `latest_receipt` with the same.
public struct SimReceiptSigner: Sendable {
    let leafKey: PrivateKey
    let leaf: X509Certificate
    let chain: [X509Certificate]

    /// `receipt` signed as Apple signs an app receipt, in base64: what `receipt-data` carries.
    public func sign(_ receipt: AppReceipt) throws -> String {
        ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, leafKey: leafKey, leaf: leaf, chain: chain))
    }
}

extension SimulatorPKI {
    /// The signer of the receipts this PKI issues (``receiptLeaf`` under ``receiptRoot``).
    public var receiptSigner: SimReceiptSigner {
        SimReceiptSigner(leafKey: receiptLeafKey, leaf: receiptLeaf, chain: [receiptIntermediate, receiptRoot])
    }

    /// `receipt` signed as Apple signs an app receipt, in base64: what `receipt-data` carries.
    public func signedReceipt(_ receipt: AppReceipt) throws -> String {
        try receiptSigner.sign(receipt)
    }

    /// What reads the simulator's receipts as authenticated: its receipt root, for sandbox receipts.
    public var receiptTrust: ReceiptTrust { ReceiptTrust(extraSandboxRoots: [receiptRoot.der]) }
}
