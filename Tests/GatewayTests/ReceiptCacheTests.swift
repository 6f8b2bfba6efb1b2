import ReceiptPath
import Synchronization
import Testing

@testable import Gateway

/// The receipt path's two caches: receipts read (by their bytes) and customers' histories decoded.
@Suite struct ReceiptCacheTests {
    @Test func aBoundedCacheDropsItsOldestFirstWhenItHasTooMany() {
        let cache = BoundedCache<Int, String>(maxEntries: 3, maxCost: 1_000)
        for k in 0..<5 { cache.insert("v\(k)", for: k, cost: 1) }
        #expect(cache.count == 3)
        #expect(cache[0] == nil && cache[1] == nil)
        #expect(cache[2] == "v2" && cache[3] == "v3" && cache[4] == "v4")
    }

    @Test func aBoundedCacheKeepsItsCostsWithinTheBudget() {
        let cache = BoundedCache<Int, Int>(maxEntries: 100, maxCost: 10)
        cache.insert(0, for: 0, cost: 4)
        cache.insert(1, for: 1, cost: 4)
        cache.insert(2, for: 2, cost: 4)  // 12 > 10: the oldest goes
        #expect(cache[0] == nil && cache[1] == 1 && cache[2] == 2)
        // A value that alone costs more than the budget is not kept, and drops nothing.
        cache.insert(3, for: 3, cost: 11)
        #expect(cache[3] == nil && cache.count == 2)
    }

    @Test func replacingAValueKeepsOneEntryAndItsNewCost() {
        let cache = BoundedCache<String, Int>(maxEntries: 2, maxCost: 10)
        cache.insert(1, for: "a", cost: 9)
        cache.insert(2, for: "a", cost: 1)
        cache.insert(3, for: "b", cost: 9)  // 1 + 9 fits: both stay
        #expect(cache.count == 2 && cache["a"] == 2 && cache["b"] == 3)
        cache.insert(4, for: "b", cost: 10)  // the whole budget: "a" goes, "b" stays
        #expect(cache["a"] == nil && cache["b"] == 4 && cache.count == 1)
    }

    @Test func aCacheOfSizeZeroKeepsNothing() {
        let cache = BoundedCache<Int, Int>(maxEntries: 0, maxCost: 10)
        cache.insert(1, for: 1, cost: 1)
        #expect(cache[1] == nil)
    }

    /// Many threads inserting and reading at once: the bounds hold and nothing is lost of what is kept.
    @Test func aBoundedCacheIsSafeToShare() async {
        let cache = BoundedCache<Int, Int>(maxEntries: 64, maxCost: 1 << 20)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for k in 0..<2_000 {
                        cache.insert(k * 8 + t, for: k * 8 + t, cost: 1)
                        if let v = cache[k * 8 + t] { #expect(v == k * 8 + t) }
                    }
                }
            }
        }
        #expect(cache.count == 64)
    }

    @Test func aReceiptIsReadOnceWhileItIsKept() {
        let reads = Atomic(0)
        let read = ReceiptReaderLoader.caching(maxEntries: 2, maxBytes: 1_000) { bytes in
            reads.add(1, ordering: .relaxed)
            guard bytes.first == UInt8(ascii: "M") else { return .notAReceipt(code: "malformed") }
            return .receipt(
                SubmittedReceipt(
                    kind: .app,
                    bundleID: String(decoding: bytes, as: UTF8.self),
                    isSandbox: true,
                    authenticated: true,
                    lookupTransactionID: "1",
                    receiptObject: { _ in .null }
                )
            )
        }
        func bundle(_ r: ReceiptReading) -> String? {
            if case .receipt(let s) = r { return s.bundleID }
            return nil
        }
        #expect(bundle(read(Array("MIIa".utf8))) == "MIIa")
        #expect(bundle(read(Array("MIIa".utf8))) == "MIIa")
        #expect(reads.load(ordering: .relaxed) == 1)
        // Other bytes are another receipt.
        #expect(bundle(read(Array("MIIb".utf8))) == "MIIb")
        #expect(reads.load(ordering: .relaxed) == 2)
        // What is not a receipt is read every time (nothing kept that an attacker could fill the cache with for free).
        #expect(bundle(read(Array("junk".utf8))) == nil)
        #expect(bundle(read(Array("junk".utf8))) == nil)
        #expect(reads.load(ordering: .relaxed) == 4)
        // Bounded: a third receipt pushes out the first, which is read again.
        _ = read(Array("MIIc".utf8))
        _ = read(Array("MIIa".utf8))
        #expect(reads.load(ordering: .relaxed) == 6)
    }
}
