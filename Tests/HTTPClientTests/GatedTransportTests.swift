import HTTPClient
import Synchronization
import TestSupport
import Testing

/// ``GatedTransport``: a purpose's own slots over a shared transport.
@Suite struct GatedTransportTests {
    /// A transport whose requests wait until released, counting those running.
    final class Held: HTTPTransport, Sendable {
        private let state = Mutex<(running: Int, released: Bool, timeouts: [Int])>((0, false, []))
        func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
            state.withLock {
                $0.running += 1
                $0.timeouts.append(request.timeoutMillis)
            }
            while !state.withLock({ $0.released }) { try? await Task.sleep(for: .milliseconds(2)) }
            state.withLock { $0.running -= 1 }
            return HTTPResponse(status: 200)
        }
        func release() { state.withLock { $0.released = true } }
        var running: Int { state.withLock { $0.running } }
        var timeouts: [Int] { state.withLock { $0.timeouts } }
    }

    @Test func onePurposeFullLeavesTheOtherItsSlots() async throws {
        let base = Held()
        let (busy, other) = (GatedTransport(base, slots: 2), GatedTransport(base, slots: 1))
        for _ in 0..<5 {
            Task.detached { _ = try? await busy.send(HTTPRequest(method: .get, url: "http://a.example/")) }
        }
        await eventually("two of five running") { base.running == 2 }
        #expect(busy.availableSlots == 0)
        Task.detached { _ = try? await other.send(HTTPRequest(method: .get, url: "http://b.example/")) }
        await eventually("the other purpose runs beside them") { base.running == 3 }
        base.release()
        await eventually("all done") { base.running == 0 && busy.availableSlots == 2 && other.availableSlots == 1 }
    }

    @Test func aRequestThatFindsNoSlotWithinItsDeadlineFailsWithoutReachingTheTransport() async throws {
        let base = Held()
        let gated = GatedTransport(base, slots: 1)
        Task.detached { _ = try? await gated.send(HTTPRequest(method: .get, url: "http://a.example/")) }
        await eventually("the slot taken") { base.running == 1 }
        do {
            _ = try await gated.send(HTTPRequest(method: .get, url: "http://a.example/late", timeoutMillis: 20))
            Issue.record("a request without a slot should time out")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.reason.contains("no free transfer slot"))
        }
        #expect(base.timeouts.count == 1, "the late request never reached the transport")
        base.release()
        await eventually("the slot free again") { gated.availableSlots == 1 }
        // A later request gets the slot, and the gate is whole: its wait ended, nothing leaked.
        #expect(try await gated.send(HTTPRequest(method: .get, url: "http://a.example/")).status == 200)
        #expect(gated.availableSlots == 1)
    }

    @Test func aCapShortensEveryRequestsDeadline() async throws {
        let base = Held()
        base.release()
        let gated = GatedTransport(base, slots: 1, maxTimeoutMillis: 5_000)
        _ = try await gated.send(HTTPRequest(method: .get, url: "http://a.example/", timeoutMillis: 30_000))
        _ = try await gated.send(HTTPRequest(method: .get, url: "http://a.example/", timeoutMillis: 1_000))
        #expect(base.timeouts.count == 2)
        #expect(base.timeouts[0] <= 5_000 && base.timeouts[0] > 4_000)
        #expect(base.timeouts[1] <= 1_000)
    }
}
