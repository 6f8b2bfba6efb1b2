/// The extensions Apple puts in its signing certificates, named once for everything that checks them (the JWS
/// verifier, the receipt signature policies) or makes look-alikes of them (the test PKIs). Each marks a certificate
/// of Apple's profile; the checks ask for them on top of a valid path to a pinned root (docs/threat-model.md).
public enum AppleMarkerOID {
    /// The leaf of a StoreKit signature: App Store Server Notifications V2, signed transactions and renewals, and
    /// app receipts (Mac App Store and iTunes Store Receipt Signing).
    public static let storeKitLeaf = "1.2.840.113635.100.6.11.1"
    /// Apple Worldwide Developer Relations CA, the intermediate of those leaves.
    public static let developerRelationsIntermediate = "1.2.840.113635.100.6.2.1"
    /// The leaf of an iOS 6 transaction receipt signed under the iTunes Store CA (PurchaseReceiptCertificate).
    public static let iTunesStoreLeaf = "1.2.840.113635.100.6.5.1"
    /// Apple iTunes Store Certification Authority, the intermediate of those leaves.
    public static let iTunesStoreIntermediate = "1.2.840.113635.100.6.2.2"
}
