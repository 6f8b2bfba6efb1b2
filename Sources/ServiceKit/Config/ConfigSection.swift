/// One object of the config file, owned by the part it configures (docs/configuration.md): where it sits, the
/// members of each of its objects, and how it is read. The service's config lists its sections, and the reference of
/// every key the parser accepts is built from those lists, so a part that adds a key adds it in one place.
package protocol ConfigSection: Sendable {
    /// Where the section sits: `receipts`, `reconcile`, `apps[].consumption` (`[]`: each element of a list).
    static var key: String { get }
    /// The members of each of its objects, by path below ``key`` ("" is the section's own object).
    static var members: [(path: String, members: Set<String>)] { get }
    /// Reads the section from its object, whose unknown members were refused (``ConfigReader/section(_:)``); the
    /// section refuses those of its nested objects itself.
    static func parse(_ r: ConfigReader) throws(ConfigError) -> Self
}

extension ConfigSection {
    /// Each of the section's objects by its full dotted path, for the reference of every key.
    package static var objects: [(path: String, members: Set<String>)] {
        members.map { ($0.path.isEmpty ? key : "\(key).\($0.path)", $0.members) }
    }

    /// The members of the section's own object.
    package static var ownMembers: Set<String> { members.first { $0.path.isEmpty }?.members ?? [] }
}

extension ConfigReader {
    /// The section named by the last component of its key, in this object: its unknown members refused, then read;
    /// nil when the object has no such member (or it is null).
    package func section<S: ConfigSection>(_: S.Type) throws(ConfigError) -> S? {
        let name = S.key.split(separator: ".").last.map(String.init) ?? S.key
        guard let object = try object(name) else { return nil }
        try object.rejectUnknown(allowed: S.ownMembers)
        return try S.parse(object)
    }
}
