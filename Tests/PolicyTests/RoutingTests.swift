import Canonical
import Policy
import Testing

@Suite struct RoutingTests {
    @Test func anAppWithoutDownstreamsTakesEveryOne() {
        let routing = Routing(
            downstreams: [
                Routing.Downstream(name: "main", kind: .webhook, environments: [.production], shadow: false)
            ],
            apps: [Routing.App(bundleID: "a", downstreams: [], compares: false, hasV1Path: false)]
        )
        #expect(routing.eventTargets(bundleID: "a", environment: .production, authoritative: true) == ["main"])
    }
}
