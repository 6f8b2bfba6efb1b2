/// A configuration problem, naming the field (`apps[0].environments[1]`) so the operator can fix it.
public struct ConfigError: Error, Hashable, CustomStringConvertible {
    public var field: String
    public var message: String
    public init(field: String, _ message: String) { (self.field, self.message) = (field, message) }
    public var description: String { field.isEmpty ? message : "\(field): \(message)" }
}
