internal import Crypto
import Synchronization
internal import Threads

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

/// The verified chains, in two bounded maps (first in, first out when full; capacity 0 disables both):
///
/// - **by header bytes** — the exact base64url protected-header segment of a token whose *signature verified*
///   under the chain. Identical bytes mean an identical `alg` and `x5c`, so a hit skips the header decode and the
///   two P-384 chain signatures: the fast path of every genuine notification. Only a token Apple really signed
///   can add an entry (the header is covered by the signature), so forged tokens cannot evict genuine ones.
/// - **by certificates** — the three `x5c` strings of a chain that passed full validation to a pinned root.
///   Chain validity does not depend on the token, so a header that is new (re-encoded, members reordered, an extra
///   member) but names a known chain costs a header parse and one ES256 verify, never a chain validation; only
///   chains ending at a pinned root can ever enter, so this map cannot be filled with an attacker's chains.
///
/// Either way the chain's validity window is still checked against each payload's own time.
final class ChainCache: Sendable {
    struct Key: Hashable {
        let bytes: [UInt8]
        /// Hashed once, when the key is made (outside the lock every handler thread looks up under): only the head
        /// (which holds the leaf's serial) and the tail, which keeps that cheap on ~6 KB headers; equality still
        /// compares every byte.
        private let digest: Int

        func hash(into h: inout Hasher) { h.combine(digest) }

        static func == (a: Key, b: Key) -> Bool {
            // Empty keys have no base address to compare (and are all equal).
            a.digest == b.digest && a.bytes.count == b.bytes.count
                && a.bytes.withUnsafeBytes { pa in
                    b.bytes.withUnsafeBytes { pb in
                        guard let x = pa.baseAddress, let y = pb.baseAddress else { return true }
                        return memcmp(x, y, pa.count) == 0
                    }
                }
        }

        /// The key of a chain by its `x5c` strings (standard base64 is strict here, so equal strings mean equal
        /// DER); `,` never occurs in base64, so the join is unambiguous.
        init(certificates: [String]) {
            self.init(bytes: Array(certificates.joined(separator: ",").utf8))
        }

        init(bytes: [UInt8]) {
            self.bytes = bytes
            var h = Hasher()
            h.combine(bytes.count)
            bytes.prefix(320).withUnsafeBytes { h.combine(bytes: $0) }
            bytes.suffix(64).withUnsafeBytes { h.combine(bytes: $0) }
            digest = h.finalize()
        }
    }

    /// One bounded first-in-first-out map with its hit and miss counts.
    private struct BoundedMap {
        var entries: [Key: VerifiedChain] = [:]
        var order: [Key] = []
        var hits = 0
        var misses = 0

        mutating func lookup(_ key: Key) -> VerifiedChain? {
            if let v = entries[key] {
                hits += 1
                return v
            }
            misses += 1
            return nil
        }

        mutating func insert(_ key: Key, _ chain: VerifiedChain, capacity: Int) {
            if entries[key] != nil { return }
            if order.count >= capacity, !order.isEmpty {
                let evicted = order.removeFirst()
                entries[evicted] = nil
            }
            entries[key] = chain
            order.append(key)
        }

        var statistics: (hits: Int, misses: Int, entries: Int) { (hits, misses, entries.count) }
    }

    private struct State {
        var headers = BoundedMap()
        var chains = BoundedMap()
    }

    let capacity: Int
    /// One copy of both maps per stripe, each behind its own lock: every V2 token is looked up here, from every
    /// handler thread, and a single lock made them queue (a handler preempted while holding it stalls the others).
    /// A thread looks up in its own stripe; an insert goes to every stripe, so each holds the same chains.
    private let stripes = Striped<State>(count: 8) { State() }

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// The chain of a header whose bytes already carried a verified signature.
    func lookup(header key: Key) -> VerifiedChain? {
        guard capacity > 0 else { return nil }
        return stripes.withOwn { $0.headers.lookup(key) }
    }

    /// Call only once the token's signature has verified under `chain`.
    func insert(header key: Key, _ chain: VerifiedChain) {
        guard capacity > 0 else { return }
        stripes.withEach { $0.headers.insert(key, chain, capacity: capacity) }
    }

    /// A chain that passed full validation, by its certificates.
    func lookup(certificates key: Key) -> VerifiedChain? {
        guard capacity > 0 else { return nil }
        return stripes.withOwn { $0.chains.lookup(key) }
    }

    /// Call only once the chain has validated to a pinned root.
    func insert(certificates key: Key, _ chain: VerifiedChain) {
        guard capacity > 0 else { return }
        stripes.withEach { $0.chains.insert(key, chain, capacity: capacity) }
    }

    /// (hits, misses, entries) of the header map since creation, for metrics and tests.
    var statistics: (hits: Int, misses: Int, entries: Int) { total(\.headers) }

    /// (hits, misses, entries) of the certificate map since creation.
    var certificateStatistics: (hits: Int, misses: Int, entries: Int) { total(\.chains) }

    /// Hits and misses summed over the stripes; the entries of one (every stripe holds the same).
    private func total(_ map: KeyPath<State, BoundedMap>) -> (hits: Int, misses: Int, entries: Int) {
        var sum = (hits: 0, misses: 0, entries: 0)
        stripes.withEach { state in
            let s = state[keyPath: map].statistics
            sum = (sum.hits + s.hits, sum.misses + s.misses, max(sum.entries, s.entries))
        }
        return sum
    }
}
