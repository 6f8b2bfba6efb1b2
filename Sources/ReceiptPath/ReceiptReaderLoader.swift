internal import Crypto
package import Receipts
package import ServiceKit

/// The receipt reader the endpoint uses (docs/architecture.md, "The receipt path"): Apple Inc. Root pinned, the
/// config's `trust.extra_receipt_roots` for sandbox receipts only (docs/threat-model.md).
package enum ReceiptReaderLoader {
    package static func reader(extraReceiptRoots: [String]) throws(ConfigError) -> @Sendable ([UInt8]) -> ReceiptReading
    {
        reader(
            trust: ReceiptTrust(
                extraSandboxRoots: try TrustAnchorLoader.certificates(
                    extraReceiptRoots,
                    field: "trust.extra_receipt_roots"
                )
            )
        )
    }

    /// The reader with `trust` (tests: a test chain's intermediates of transaction receipts, which the config does
    /// not name), behind the cache.
    package static func reader(trust: ReceiptTrust) -> @Sendable ([UInt8]) -> ReceiptReading {
        caching { bytes in
            do throws(ReceiptError) {
                return .receipt(SubmittedReceipt(try ReceiptReader.read(bytes, trust: trust)))
            } catch {
                return .notAReceipt(code: error.code.rawValue)
            }
        }
    }

    /// `read` behind a cache of the receipts it read. Apps send the same receipt again and again (every launch, every
    /// restore) until a purchase or a refresh changes it, and what reading one gives depends on its bytes alone (the
    /// signature is judged at the receipt's own creation date): so a receipt is read once while it is kept — by the
    /// SHA-256 of `receipt-data` as sent, costed by its size; what is not a receipt is not kept.
    package static func caching(
        maxEntries: Int = 4_096,
        maxBytes: Int = 16 << 20,
        _ read: @escaping @Sendable ([UInt8]) -> ReceiptReading
    ) -> @Sendable ([UInt8]) -> ReceiptReading {
        let known = BoundedCache<[UInt8], SubmittedReceipt>(maxEntries: maxEntries, maxCost: maxBytes)
        return { bytes in
            let digest = SHA256.hash(bytes)
            if let receipt = known[digest] { return .receipt(receipt) }
            let reading = read(bytes)
            if case .receipt(let receipt) = reading { known.insert(receipt, for: digest, cost: bytes.count) }
            return reading
        }
    }
}

extension SubmittedReceipt {
    /// A receipt as the reader read it.
    package init(_ r: DecodedReceipt) {
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
            signatureFailure: r.signature.failure,
            receiptObject: { r.receiptObject(requestDate: $0) }
        )
    }
}
