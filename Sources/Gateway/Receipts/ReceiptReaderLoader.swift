internal import Receipts

/// The receipt reader the endpoint uses (docs/architecture.md, "The receipt path"): Apple Inc. Root pinned, the
/// config's `trust.extra_receipt_roots` for sandbox receipts only (docs/threat-model.md).
enum ReceiptReaderLoader {
    static func reader(config: GatewayConfig) throws(ConfigError) -> @Sendable ([UInt8]) -> ReceiptReading {
        let trust = ReceiptTrust(
            extraSandboxRoots: try TrustAnchorLoader.certificates(
                config.extraReceiptRoots,
                field: "trust.extra_receipt_roots"
            )
        )
        return { bytes in
            do throws(ReceiptError) {
                return .receipt(SubmittedReceipt(try ReceiptReader.read(bytes, trust: trust)))
            } catch {
                return .notAReceipt(code: error.code.rawValue)
            }
        }
    }
}

extension SubmittedReceipt {
    /// A receipt as the reader read it.
    init(_ r: DecodedReceipt) {
        let kind: Kind =
            switch r.format {
            case .appReceipt: .app
            case .xcode: .xcode
            case .transactionReceipt: .transaction
            }
        self.init(
            kind: kind,
            bundleID: r.app?.bundleID ?? r.transaction?.bundleID,
            isSandbox: r.isSandbox,
            authenticated: r.isAuthenticated,
            lookupTransactionID: r.lookupTransactionID,
            receiptObject: { r.receiptObject(requestDate: $0) }
        )
    }
}
