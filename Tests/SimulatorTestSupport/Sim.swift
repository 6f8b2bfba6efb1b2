import Foundation
public import Simulator
import Synchronization
import TestSupport
import Testing
public import V2Adapter

/// Fixtures shared by every test of the simulator and of what runs against it (the App Store Server API client): a
/// fixed clock, a fresh PKI per test (cheap: EC keys only), the real V2 verifier trusting the simulator's root for
/// sandbox, lifecycle plans and long subscriptions.
public enum Sim {
    /// 2025-06-01 00:00:00 UTC (ms): every PKI of these tests is generated "now" = t0.
    public static let t0: Int64 = 1_748_736_000_000
    /// One simulated month: 30 days.
    public static let month: Int64 = 30 * 86_400_000
    public static let secret = "5f1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d"
    public static let bundleID = Catalogue.bundleID

    /// Runs `body` with a freshly generated simulator PKI in its own folder, removed afterwards.
    public static func withPKI<T>(now: Int64 = t0, _ body: (SimulatorPKI) throws -> T) throws -> T {
        let folder = try Scratch.directory("simtests")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try body(try pki(folder: folder + "/pki", now: now))
    }

    /// The same for async tests.
    public static func withPKI<T>(now: Int64 = t0, _ body: (SimulatorPKI) async throws -> T) async throws -> T {
        try await Scratch.withDirectory { folder in
            try await body(try pki(folder: folder + "/pki", now: now))
        }
    }

    /// ``SimulatorPKI/loadOrCreate(folder:now:)`` for a test: fresh EC keys and chain in `folder`, the receipt chain
    /// copied from one generated once per process and day of `now` — its three RSA-2048 keys take about 0.7 s to make,
    /// and most tests never sign a receipt.
    public static func pki(folder: String, now: Int64) throws -> SimulatorPKI {
        let template = try receiptChains.withLock { chains -> String in
            let day = now / 86_400_000
            if let made = chains[day] { return made }
            let made = try Scratch.directory("simtests-receipt-chain")
            _ = try SimulatorPKI.loadOrCreate(folder: made, now: day * 86_400_000)
            chains[day] = made
            return made
        }
        let fm = FileManager.default
        if !fm.fileExists(atPath: folder) {
            try fm.createDirectory(
                atPath: folder,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        }
        // The root last, as loadOrCreate writes it: a folder with it has the whole chain.
        for name in ["receipt-leaf.key.pem", "receipt-leaf.der", "receipt-intermediate.der", "receipt-root.der"]
        where !fm.fileExists(atPath: folder + "/" + name) {
            try fm.copyItem(atPath: template + "/" + name, toPath: folder + "/" + name)
        }
        return try SimulatorPKI.loadOrCreate(folder: folder, now: now)
    }

    private static let receiptChains = Mutex<[Int64: String]>([:])

    /// The real V2 verifier: Apple's root for everything, the simulator's root (when given) for sandbox only.
    public static func adapter(
        sandboxRoots: [[UInt8]],
        appleRoots: [[UInt8]] = [TrustAnchors.appleRootCAG3],
        apps: [V2App]? = nil
    ) throws
        -> V2Adapter
    {
        V2Adapter(
            verifier: AppleJWSVerifier(
                anchors: try TrustAnchors(appleRoots: appleRoots, sandboxOnlyRoots: sandboxRoots)
            ),
            apps: apps
        )
    }

    /// The gateway's view: the simulated app configured for sandbox, the simulator root as an extra root.
    public static func adapter(trusting pki: SimulatorPKI) throws -> V2Adapter {
        try adapter(
            sandboxRoots: [pki.root.der],
            apps: [V2App(bundleID: bundleID, appAppleID: nil, environments: [.sandbox])]
        )
    }

    public static func plan(
        _ name: String,
        pki: SimulatorPKI,
        start: Int64 = t0,
        firstID: Int64 = 1,
        appAppleID: Int64? = nil
    ) throws
        -> Lifecycle.Plan
    {
        let lifecycle = try #require(Lifecycles.named(name))
        return try lifecycle.plan(
            bundleID: bundleID,
            sharedSecret: secret,
            emitter: Emitter(pki: pki, appAppleID: appAppleID),
            start: start,
            monthMillis: month,
            firstID: firstID
        )
    }

    /// A copy of `s` with `count` transactions: the existing ones, then monthly renewals with fresh ids.
    public static func withTransactions(_ s: SimSubscription, count: Int) throws -> SimSubscription {
        var s = s
        let base = try #require(s.latest)
        var i = 0
        while s.transactions.count < count {
            i += 1
            var t = base
            t.transactionID = "3" + String(repeating: "0", count: 12) + String(format: "%03d", i)
            t.webOrderLineItemID = "4" + String(repeating: "0", count: 12) + String(format: "%03d", i)
            t.purchaseDate = base.purchaseDate + Int64(i) * month
            t.expiresDate = base.purchaseDate + Int64(i + 1) * month
            t.renewal = true
            s.transactions.append(t)
        }
        return s
    }
}
