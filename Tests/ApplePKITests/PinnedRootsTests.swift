import ApplePKI
import Crypto
import TestPKI
import Testing

/// The one rule of pinned roots, for V2 signatures and receipts alike: Apple's roots vouch for every environment,
/// extra roots for sandbox only; a root given twice counts once and a root in both lists stays production-trusted;
/// bytes that are not a certificate are left out and said.
@Suite struct PinnedRootsTests {
    static let a = try! GeneratedTestPKI.generate(notBefore: 0, notAfter: 4_000_000_000, name: "Pinned A").root.der
    static let b = try! GeneratedTestPKI.generate(notBefore: 0, notAfter: 4_000_000_000, name: "Pinned B").root.der

    @Test func productionRootsComeFirstAndExtraOnesAreSandboxOnly() {
        let pinned = PinnedRoots(productionRoots: [Self.a], sandboxOnlyRoots: [Self.b])
        #expect(pinned.roots.map(\.certificate.der) == [Self.a, Self.b])
        #expect(pinned.roots.map(\.trustedForProduction) == [true, false])
        #expect(pinned.root(matching: Self.b)?.trustedForProduction == false)
        #expect(pinned.root(matching: Array(Self.b.dropLast())) == nil, "byte-equal only")
        #expect(pinned.unusable.isEmpty)
    }

    @Test func aRootInBothListsStaysTrustedForProductionAndCountsOnce() {
        let pinned = PinnedRoots(productionRoots: [Self.a, Self.a], sandboxOnlyRoots: [Self.a, Self.b, Self.b])
        #expect(pinned.roots.count == 2)
        #expect(pinned.root(matching: Self.a)?.trustedForProduction == true)
    }

    @Test func bytesThatAreNoCertificateAreLeftOutAndSaid() {
        let pinned = PinnedRoots(productionRoots: [[0x30, 0x00]], sandboxOnlyRoots: [Self.b, Array("not der".utf8)])
        #expect(pinned.roots.map(\.certificate.der) == [Self.b])
        #expect(pinned.unusable.map(\.index) == [0, 1] && pinned.unusable.map(\.production) == [true, false])
    }

    @Test func theMarkersAreApples() {
        #expect(AppleMarkerOID.storeKitLeaf == "1.2.840.113635.100.6.11.1")
        #expect(AppleMarkerOID.developerRelationsIntermediate == "1.2.840.113635.100.6.2.1")
        #expect(AppleMarkerOID.iTunesStoreLeaf == "1.2.840.113635.100.6.5.1")
        #expect(AppleMarkerOID.iTunesStoreIntermediate == "1.2.840.113635.100.6.2.2")
    }
}
