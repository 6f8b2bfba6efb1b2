/// What these tests share with GatewayTests' harness (`Tests/GatewayTests/GatewayTestHarness.swift`).
enum GatewayHarness {
    /// How long a test waits for a condition that should hold within moments. Only a failing test ever waits this
    /// long, so it is far above what the slowest condition needs while other processes keep both cores busy
    /// (`scripts/test --stress N --load`): a tight deadline on a condition turns a loaded machine into a failure.
    static let patience: Duration = .seconds(60)
}
