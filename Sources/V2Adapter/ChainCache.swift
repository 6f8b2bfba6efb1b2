internal import Crypto
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A chain that passed full validation once: what a later token with byte-identical header needs to skip the two
/// P-384 chain signatures. The validity window is still checked against each payload's own time.
final class VerifiedChain: Sendable {
    let leafKey: PublicKey
    let leafSerial: String
    /// Intersection of the three certificates' validity, in seconds since the epoch: valid when
    /// `notBefore <= t < notAfter`, exactly where OpenSSL's `X509_cmp_time` draws the lines.
    let notBefore: Int64
    let notAfter: Int64
    let trustedForProduction: Bool

    init(leafKey: PublicKey, leafSerial: String, notBefore: Int64, notAfter: Int64, trustedForProduction: Bool) {
        self.leafKey = leafKey
        self.leafSerial = leafSerial
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.trustedForProduction = trustedForProduction
    }
}

/// A bounded map from a JWS protected-header segment (the exact base64url bytes, so identical bytes mean an
/// identical `alg` and `x5c`) to its verified chain. First in, first out when full; capacity 0 disables it.
final class ChainCache: Sendable {
    struct Key: Hashable {
        let bytes: [UInt8]
        // Hashing only the head (which holds the leaf's serial) and the tail keeps lookups cheap on ~6 KB headers;
        // equality still compares every byte.
        func hash(into h: inout Hasher) {
            h.combine(bytes.count)
            bytes.prefix(320).withUnsafeBytes { h.combine(bytes: $0) }
            bytes.suffix(64).withUnsafeBytes { h.combine(bytes: $0) }
        }

        static func == (a: Key, b: Key) -> Bool {
            a.bytes.count == b.bytes.count
                && a.bytes.withUnsafeBytes { pa in
                    b.bytes.withUnsafeBytes { pb in memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0 }
                }
        }
    }

    private struct State {
        var entries: [Key: VerifiedChain] = [:]
        var order: [Key] = []
        var hits = 0
        var misses = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(0, capacity) }

    func lookup(_ key: Key) -> VerifiedChain? {
        guard capacity > 0 else { return nil }
        return state.withLock { s in
            if let v = s.entries[key] {
                s.hits += 1
                return v
            }
            s.misses += 1
            return nil
        }
    }

    func insert(_ key: Key, _ chain: VerifiedChain) {
        guard capacity > 0 else { return }
        state.withLock { s in
            if s.entries[key] != nil { return }
            if s.order.count >= capacity {
                let evicted = s.order.removeFirst()
                s.entries[evicted] = nil
            }
            s.entries[key] = chain
            s.order.append(key)
        }
    }

    /// (hits, misses, entries) since creation, for metrics and tests.
    var statistics: (hits: Int, misses: Int, entries: Int) {
        state.withLock { ($0.hits, $0.misses, $0.entries.count) }
    }
}
