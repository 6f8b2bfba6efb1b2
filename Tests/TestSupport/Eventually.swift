import Foundation
public import Testing

/// How long a test waits for a condition that should hold within moments, and how often it looks.
///
/// Every wait of the tests goes through ``eventually(_:within:every:recordsIssue:sourceLocation:_:)`` (or
/// ``eventuallyBlocking(_:within:every:recordsIssue:sourceLocation:_:)`` outside async code): a condition is polled
/// until it holds or its deadline passes, never a fixed sleep standing in for it. Only a failing test ever waits the
/// whole deadline, so it is far above what the slowest condition needs while other processes keep both cores busy
/// (`scripts/test --stress N --load`): a tight deadline turns a loaded machine into a failure.
public enum Patience {
    /// A minute, times `IAPGW_TEST_PATIENCE_SCALE` when that is a positive number (say `3` on a slow emulated machine).
    public static let `default`: Duration = .seconds(60) * scale

    /// Between two looks at a condition: short, so a test goes on moments after its condition holds.
    public static let interval: Duration = .milliseconds(10)

    /// `IAPGW_TEST_PATIENCE_SCALE`, or 1.
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["IAPGW_TEST_PATIENCE_SCALE"], let value = Double(text),
            value.isFinite, value > 0
        else { return 1 }
        return value
    }()

    static func timedOut(_ what: String, after timeout: Duration, at sourceLocation: SourceLocation) -> Comment {
        "timed out after \(timeout) waiting for: \(what) (\(sourceLocation.fileID):\(sourceLocation.line))"
    }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes. When the deadline passes first it records an
/// issue at the caller naming `what` (unless `recordsIssue` is false: the caller reports it, or the wait only orders
/// steps) and returns false; true as soon as the condition holds. An error the condition throws ends the wait and
/// reaches the caller. A cancelled task stops waiting (recorded as a timeout).
@discardableResult
public func eventually(
    _ what: @autoclosure () -> String = "the condition",
    within timeout: Duration = Patience.default,
    every interval: Duration = Patience.interval,
    recordsIssue: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if try await condition() { return true }
        guard clock.now < deadline, !Task.isCancelled else { break }
        try? await Task.sleep(for: min(interval, clock.now.duration(to: deadline)))
    }
    if recordsIssue {
        Issue.record(Patience.timedOut(what(), after: timeout, at: sourceLocation), sourceLocation: sourceLocation)
    }
    return false
}

/// ``eventually(_:within:every:recordsIssue:sourceLocation:_:)`` for synchronous code: the same deadline rule, sleeping
/// the calling thread between looks (a test that is not async, or a handler on a server's thread — which passes
/// `recordsIssue: false`, as it runs outside any test). Not for async code, where it would hold a thread of the pool.
@available(*, noasync, message: "use eventually(_:within:every:recordsIssue:sourceLocation:_:), which suspends")
@discardableResult
public func eventuallyBlocking(
    _ what: @autoclosure () -> String = "the condition",
    within timeout: Duration = Patience.default,
    every interval: Duration = Patience.interval,
    recordsIssue: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if try condition() { return true }
        guard clock.now < deadline else { break }
        let pause = min(interval, clock.now.duration(to: deadline)).components
        Thread.sleep(forTimeInterval: Double(pause.seconds) + Double(pause.attoseconds) / 1e18)
    }
    if recordsIssue {
        Issue.record(Patience.timedOut(what(), after: timeout, at: sourceLocation), sourceLocation: sourceLocation)
    }
    return false
}
