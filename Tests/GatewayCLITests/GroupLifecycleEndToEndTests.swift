import Canonical
import Foundation
import Gateway
import HTTPClient
import HTTPServer
import ServiceKit
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

/// Every group (multiseat) lifecycle through the real gateway, with the team's old backend behind a `v1_passthrough`
/// downstream (docs/simulator.md, "Group subscriptions"), in the two ways Apple may send: V2 alone, V2 authoritative
/// (the old backend gets the gateway's V1 shapes of V2 notifications); and both generations, V1 authoritative and
/// compared (the old backend gets Apple's V1 bodies as sent). After every step, against the simulated App Store's
/// truth at that step: while the group has a seat in a running period, the V2 path holds the purchaser entitled — its
/// subscription state and the step's event — and no V1 body the old backend received about the purchaser revokes: no
/// `CANCEL`, `REFUND` or `REVOKE`, no `cancellation_date` on the purchaser's transactions. Once no seat is left (a
/// whole refund), the V2 path revokes and the old backend got the cancellation. With both generations, the comparison
/// calls nothing a disagreement.
@Suite struct GroupLifecycleEndToEndTests {
    static let revoking: Set<String> = ["CANCEL", "REFUND", "REVOKE"]

    /// The fake Apple, the new and the old backend, and the gateway on a story clock.
    final class Rig {
        let folder: String
        let pki: SimulatorPKI
        let apple: HTTPServer
        let receiver: LoopbackHTTPServer
        let oldBackend: LoopbackHTTPServer
        let gateway: GatewayService
        let port: UInt16
        let clock = CompareEndToEndTests.StoryClock()

        init(both: Bool) throws {
            folder = try Scratch.directory()
            pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            let clock = self.clock
            let now: @Sendable () -> Int64 = { clock.now }
            let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport(), now: now)
            apple = HTTPServer(configuration: .init(), handler: fake.handle)
            try apple.start()
            receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
            oldBackend = try LoopbackHTTPServer { _ in .respond(status: 200) }
            (gateway, port) = try SimulatorLifecycleTests.startGateway(
                pki: pki,
                apple: apple.port,
                receiver: receiver,
                authority: both ? "v1" : "v2",
                compare: both,
                compareSettings: both
                    ? #""min_pairs": 5, "grace": "1h", "tolerance": "10m", "confirm_delay": "100ms""# : "",
                oldBackend: oldBackend,
                now: now
            )
        }

        var store: any GatewayStore { gateway.store }

        /// Until no receipt job, comparison fetch or delivery is pending.
        func settle() async throws {
            try await eventually("the step's work settles") {
                let pending = try await self.store.read { tx in
                    try (tx.receiptJobCounts()[.pending] ?? 0) + tx.fetchJobs(state: .pending).count
                        + (tx.deliveryCounts()[.pending] ?? 0)
                }
                return pending == 0
            }
        }

        /// The V2 path's stored state of `otid`: its entitlement's state and the group's seats.
        func v2State(_ otid: String) async throws -> (entitlement: String?, seats: Int64?)? {
            let states = try await store.read { tx in try tx.subscriptionStates(originalTransactionID: otid) }
            guard let state = states.first(where: { $0.path == .v2 }) else { return nil }
            let json = try JSONParser.parse(state.json).objectValue
            return (json?["entitlement"]?.objectValue?["state"]?.stringValue, json?["seats"]?.int64Value)
        }

        /// The stored entitlement of the event `id`.
        func entitlement(ofEvent id: String) async throws -> Entitlement.State? {
            try await store.read { tx in try tx.events(id: id, originalTransactionID: nil, limit: 1) }.first?.event
                .entitlement?.state
        }

        func stop() async {
            await gateway.shutdown()
            apple.stop()
            receiver.stop()
            oldBackend.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// What an old-backend body says of `otid`: its type, and whether it cancels one of its transactions.
    static func reads(_ body: [UInt8], about otid: String) throws -> (about: Bool, type: String, cancels: Bool) {
        let object = try #require(try JSONParser.parse(body).objectValue)
        let entries =
            object["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let mine = entries.filter { $0["original_transaction_id"]?.stringValue == otid }
        let about = object["original_transaction_id"]?.stringValue == otid || !mine.isEmpty
        let cancels = mine.contains { $0["cancellation_date"] != nil || $0["cancellation_date_ms"] != nil }
        return (about, object["notification_type"]?.stringValue ?? "", cancels)
    }

    @Test(arguments: Lifecycles.groups.map(\.name), ["v2", "both"])
    func thePurchaserKeepsAccessAndTheOldBackendHearsNoRevocationWhileASeatRemains(
        name: String,
        apple: String
    ) async throws {
        let rig = try Rig(both: apple == "both")
        var options = Simulation.LifecycleOptions(
            name: name,
            to: "http://127.0.0.1:\(rig.port)/notifications",
            pkiFolder: rig.pki.folder,
            bundleID: SimulatorLifecycleTests.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = apple == "both" ? .both : .v2
        // Apple's truth as the story goes: the purchaser (the story's first subscription) as the App Store holds it.
        let truth = Mutex<SimSubscription?>(nil)
        let seen = Mutex(0)
        let problems = Mutex<[String]>([])
        let checked = Mutex(0)
        func problem(_ text: String) { problems.withLock { $0.append(text) } }
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: { WallClock.wallMillis() },
            sleep: { _ in },
            output: { _ in },
            beforeStep: { e in rig.clock.set(e.at) },
            afterStep: { e in
                try await rig.settle()
                let purchaser = truth.withLock { t -> SimSubscription? in
                    if t == nil || t?.originalTransactionID == e.originalTransactionID { t = e.subscription }
                    return t
                }
                guard let purchaser else { return }
                let otid = purchaser.originalTransactionID
                let hasSeat = purchaser.groupSeats > 0 && (purchaser.latest?.expiresDate ?? .min) > e.at
                let step = "\(name) over \(apple) '\(e.step)'"
                // The old backend: what arrived during this step.
                let bodies = rig.oldBackend.requests.filter { $0.path == "/apple/v1" }
                let new = bodies.dropFirst(seen.withLock { $0 })
                seen.withLock { $0 = bodies.count }
                for request in new {
                    let read = try Self.reads(request.body, about: otid)
                    guard read.about else { continue }
                    checked.withLock { $0 += 1 }
                    if hasSeat, Self.revoking.contains(read.type) || read.cancels {
                        problem(
                            "\(step): the old backend got \(read.type) (cancels: \(read.cancels)) with \(purchaser.groupSeats) seats left"
                        )
                    }
                }
                guard hasSeat else { return }
                // The V2 path: the purchaser's state, and the step's event when it is about the purchaser.
                let state = try await rig.v2State(otid)
                if state?.entitlement != "active" {
                    problem("\(step): the V2 path's state is \(state?.entitlement ?? "none") with seats left")
                }
                if e.originalTransactionID == otid, let id = e.v2NotificationUUID {
                    let event = try await rig.entitlement(ofEvent: id)
                    if event != .active { problem("\(step): the V2 event says \(event?.rawValue ?? "none")") }
                }
            }
        )
        #expect(run.ok, "every notification accepted")
        #expect(problems.withLock { $0 } == [])
        #expect(checked.withLock { $0 } > 0, "the old backend heard of the purchaser")

        // Where the story ends: a group with a seat left is entitled; one refunded whole is revoked on the V2 path,
        // and the old backend got the cancellation.
        let purchaser = try #require(truth.withLock { $0 })
        let otid = purchaser.originalTransactionID
        let state = try await rig.v2State(otid)
        let final = try #require(Lifecycles.named(name)?.final.first)
        #expect(state?.entitlement == final.rawValue, "\(name) over \(apple): the V2 path ends where Apple does")
        #expect(state?.seats == Int64(purchaser.groupSeats), "\(name) over \(apple): the group's seats")
        let cancellations = try rig.oldBackend.requests.filter { $0.path == "/apple/v1" }.map {
            try Self.reads($0.body, about: otid)
        }.filter { $0.about && $0.type == "CANCEL" }
        #expect(cancellations.count == (final == .revoked ? 1 : 0), "\(name) over \(apple): the cancellation, once")

        if apple == "both" {
            // The comparison: seat events are V2's alone and never compared; everything compared agrees.
            try await rig.settle()
            let ledger = try rig.store.ledger()
            #expect(!ledger.isEmpty, "\(name): both paths compared")
            #expect(
                ledger.filter { $0.outcome != .agree }.map {
                    "\($0.subscription.originalTransactionID) \($0.outcome.rawValue) \($0.fields.joined(separator: ","))"
                } == [],
                "\(name)"
            )
        }
        await rig.stop()
    }
}
