import Dispatch
import Foundation
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter

/// The simulated App Store's world and the file it is shared through.
@Suite struct SimStateStoreTests {
    static func withStore(_ body: (SimStateStore, String) throws -> Void) throws {
        let folder = try Scratch.directory("simstate")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(SimStateStore(folder: folder), folder)
    }

    @Test func freshStoreReadsAnEmptyWorld() throws {
        try Self.withStore { store, folder throws in
            #expect(store.path == folder + "/sim-state.json")
            let world = try store.read()
            #expect(world.nextID == 1)
            #expect(world.subscriptions.isEmpty && world.notifications.isEmpty && world.testNotifications.isEmpty)
            #expect(world.verifyReceiptFaults.isEmpty && world.apiFaults.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: store.path), "reading writes nothing")
        }
    }

    @Test func updateThenReadRoundTrips() throws {
        try Sim.withPKI { pki throws in
            let store = SimStateStore(folder: pki.folder)
            let s = try Sim.finalSubscription("billing-grace-recovery", pki: pki)
            var sent = SimSentNotification(
                notificationUUID: "u1",
                bundleID: Sim.bundleID,
                signedDate: Sim.t0,
                notificationType: "DID_RENEW",
                subtype: "BILLING_RECOVERY",
                originalTransactionID: s.originalTransactionID,
                signedPayload: "p"
            )
            sent.sendAttempts = [SendAttempt(attemptDate: Sim.t0 + 1, sendAttemptResult: "SUCCESS")]
            let id = try store.update { world -> String in
                world.subscriptions[s.originalTransactionID] = s
                world.notifications.append(sent)
                world.testNotifications["t"] = sent
                world.verifyReceiptFaults = [21005]
                world.apiFaults = [429, 500]
                return world.newID()
            }
            #expect(id == "2000000000000001")
            // Another store over the same folder (another process, in the product) sees it all.
            let world = try SimStateStore(folder: pki.folder).read()
            #expect(world.nextID == 2)
            #expect(world.subscriptions == [s.originalTransactionID: s])
            #expect(world.notifications == [sent])
            #expect(world.testNotifications == ["t": sent])
            #expect(world.verifyReceiptFaults == [21005] && world.apiFaults == [429, 500])
            #expect(FileManager.default.fileExists(atPath: store.path))
            #expect(
                !FileManager.default.fileExists(atPath: store.path + ".tmp"),
                "the temporary file is renamed into place"
            )
        }
    }

    @Test func aThrowingUpdateChangesNothing() throws {
        try Self.withStore { store, _ throws in
            try store.update { $0.nextID = 10 }
            struct Boom: Error {}
            #expect(throws: Boom.self) {
                try store.update { world in
                    world.nextID = 99
                    throw Boom()
                }
            }
            #expect(try store.read().nextID == 10)
        }
    }

    @Test func corruptStateIsAnError() throws {
        try Self.withStore { store, _ throws in
            #expect(FileManager.default.createFile(atPath: store.path, contents: Data("{not json".utf8)))
            #expect(throws: (any Error).self) { try store.read() }
            // An empty file is a fresh world.
            #expect(FileManager.default.createFile(atPath: store.path, contents: Data()))
            #expect(try store.read().nextID == 1)
        }
    }

    @Test func concurrentUpdatesLoseNothing() throws {
        try Self.withStore { store, _ throws in
            let failures = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 50) { _ in
                do { try store.update { $0.nextID += 1 } } catch { failures.withLock { $0 += 1 } }
            }
            #expect(failures.withLock { $0 } == 0)
            #expect(try store.read().nextID == 51)
        }
    }

    @Test func concurrentNewIDsAreUnique() throws {
        try Self.withStore { _, folder throws in
            let ids = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 40) { _ in
                // Separate store values, as separate commands would have.
                if let id = try? SimStateStore(folder: folder).update({ $0.newID() }) {
                    ids.withLock { $0.append(id) }
                }
            }
            let all = ids.withLock { $0 }
            #expect(all.count == 40)
            #expect(Set(all).count == 40)
            #expect(
                Set(all)
                    == Set((1...40).map { "2" + String(repeating: "0", count: 15 - String($0).count) + String($0) })
            )
        }
    }

    @Test func recordTestAttemptAppends() throws {
        try Self.withStore { store, _ throws in
            let sent = SimSentNotification(
                notificationUUID: "tok",
                bundleID: Sim.bundleID,
                signedDate: Sim.t0,
                notificationType: "TEST",
                subtype: nil,
                originalTransactionID: nil,
                signedPayload: "p"
            )
            try store.update { $0.testNotifications["tok"] = sent }
            try store.recordTestAttempt(token: "tok", result: "TIMED_OUT", at: Sim.t0 + 1)
            try store.recordTestAttempt(token: "tok", result: "SUCCESS", at: Sim.t0 + 2)
            try store.recordTestAttempt(token: "unknown", result: "SUCCESS", at: Sim.t0 + 3)
            let world = try store.read()
            #expect(world.testNotifications["tok"]?.sendAttempts.map(\.sendAttemptResult) == ["TIMED_OUT", "SUCCESS"])
            #expect(world.testNotifications["tok"]?.sendAttempts.map(\.attemptDate) == [Sim.t0 + 1, Sim.t0 + 2])
            #expect(world.testNotifications.count == 1, "an unknown token records nothing")
        }
    }
}

@Suite struct SimWorldTests {
    @Test func newIDsHaveSandboxShape() {
        var world = SimWorld()
        #expect(world.newID() == "2000000000000001")
        #expect(world.newID() == "2000000000000002")
        world.nextID = 123_456_789
        #expect(world.newID() == "2000000123456789")
        #expect(world.nextID == 123_456_790)
        world.nextID = 999_999_999_999_999
        #expect(world.newID() == "2999999999999999")
    }

    @Test func subscriptionLookups() throws {
        try Sim.withPKI { pki throws in
            let a = try Sim.finalSubscription("auto-renew", pki: pki)
            let b = try #require(try Sim.plan("refund", pki: pki, firstID: 50).emissions.last).subscription
            var world = SimWorld()
            world.subscriptions = [a.originalTransactionID: a, b.originalTransactionID: b]
            #expect(world.subscription(forReceipt: a.receiptToken)?.originalTransactionID == a.originalTransactionID)
            #expect(world.subscription(forReceipt: b.receiptToken)?.originalTransactionID == b.originalTransactionID)
            #expect(world.subscription(forReceipt: "nope") == nil)
            for t in a.transactions {
                #expect(
                    world.subscription(forTransaction: t.transactionID)?.originalTransactionID
                        == a.originalTransactionID
                )
            }
            #expect(world.subscription(forTransaction: b.originalTransactionID) == b)
            #expect(
                world.subscription(forTransaction: a.transactions[0].webOrderLineItemID ?? "") == nil,
                "web order ids are not transaction ids"
            )
            #expect(world.subscription(forTransaction: "2999999999999999") == nil)
        }
    }

    @Test func latestIsTheNewestPurchase() throws {
        try Sim.withPKI { pki throws in
            var s = try Sim.finalSubscription("auto-renew", pki: pki)
            let newest = s.transactions[2]
            s.transactions.reverse()
            #expect(s.latest == newest, "by purchase date, not by position")
            // Same purchase date: the larger transaction id wins.
            var twin = newest
            twin.transactionID = "2999999999999999"
            s.transactions.insert(twin, at: 0)
            #expect(s.latest?.transactionID == "2999999999999999")
            s.transactions = []
            #expect(s.latest == nil)
        }
    }

    @Test func worldRoundTripsThroughJSON() throws {
        try Sim.withPKI { pki throws in
            var world = SimWorld()
            let plan = try Sim.plan("price-increase-accepted", pki: pki)
            for e in plan.emissions { world.subscriptions[e.originalTransactionID] = e.subscription }
            world.nextID = plan.nextID
            world.notifications = [
                SimSentNotification(
                    notificationUUID: "u",
                    bundleID: Sim.bundleID,
                    signedDate: 1,
                    notificationType: "T",
                    subtype: nil,
                    originalTransactionID: nil,
                    signedPayload: "p"
                )
            ]
            let decoded = try JSONDecoder().decode(SimWorld.self, from: try JSONEncoder().encode(world))
            #expect(decoded.subscriptions == world.subscriptions)
            #expect(decoded.notifications == world.notifications)
            #expect(decoded.nextID == plan.nextID)
        }
    }
}
