/// What Apple did after a refund request's CONSUMPTION_REQUEST: what it received, how long it waited, what it
/// decided, and the story played with that answer.
public struct RefundRequestOutcome: Sendable {
    /// The transaction the customer asked a refund for.
    public var transactionID: String
    /// The last consumption information received about it; nil when none arrived within the wait.
    public var info: SimConsumptionInfo?
    /// Real time waited (ms).
    public var waitedMillis: Int64
    /// `REFUND` or `REFUND_DECLINED` (``LifecycleContext/refundDecision(_:)``).
    public var decision: String
    /// The story with Apple's answer: the same steps up to the request, then Apple's decision.
    public var plan: Lifecycle.Plan
}

extension Lifecycle {
    /// After step `index` of `plan` (a refund request's CONSUMPTION_REQUEST, ``Emission/awaitsConsumptionInfo``) was
    /// sent: polls `store` for consumption information about the transaction until some arrives or `waitMillis`
    /// (real time) pass, then plays the story again with what Apple heard (``LifecycleContext/refundAnswers``) — the
    /// same steps up to `index`, then Apple's decision.
    public func awaitRefundAnswer(
        after index: Int,
        of plan: Plan,
        store: SimStateStore,
        waitMillis: Int64
    ) async throws -> RefundRequestOutcome {
        guard plan.emissions.indices.contains(index), let transactionID = plan.emissions[index].awaitsConsumptionInfo
        else {
            throw SimulatorError("bad_step", "step \(index + 1) of \(name) is not a refund request")
        }
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started.advanced(by: .milliseconds(max(0, waitMillis)))
        var info: SimConsumptionInfo?
        while true {
            info = try store.consumptionInfo(transactionID: transactionID).last
            if info != nil || clock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(min(50, max(1, waitMillis))))
        }
        let waited = started.duration(to: clock.now).components
        var answers = plan.refundAnswers
        answers[transactionID] = info?.refundPreference
        var replayed = plan
        if answers != plan.refundAnswers {
            guard let inputs = plan.inputs else {
                throw SimulatorError("bad_step", "the plan of \(name) cannot be played again")
            }
            replayed = try self.plan(
                bundleID: inputs.bundleID,
                sharedSecret: inputs.sharedSecret,
                emitter: inputs.emitter,
                start: plan.start,
                monthMillis: inputs.monthMillis,
                firstID: inputs.firstID,
                refundAnswers: answers
            )
            guard replayed.emissions.count > index,
                replayed.emissions[index].v2NotificationUUID == plan.emissions[index].v2NotificationUUID
            else {
                throw SimulatorError("replay_diverged", "\(name) played differently up to Apple's answer")
            }
        }
        return RefundRequestOutcome(
            transactionID: transactionID,
            info: info,
            waitedMillis: waited.seconds * 1000 + waited.attoseconds / 1_000_000_000_000_000,
            decision: LifecycleContext.refundDecision(info?.refundPreference),
            plan: replayed
        )
    }
}
