/// The one error type of the simulator.
public struct SimulatorError: Error, Hashable, CustomStringConvertible {
    public var code: String
    public var reason: String
    public init(_ code: String, _ reason: String) { (self.code, self.reason) = (code, reason) }
    public var description: String { "\(code): \(reason)" }
}
