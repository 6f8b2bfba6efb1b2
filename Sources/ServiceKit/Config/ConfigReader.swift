internal import Canonical
package import WireJSON

/// Typed access to one JSON object of the config file, with errors that name the field's full path and a check
/// that no unknown member (a typo) is silently ignored.
package struct ConfigReader {
    package let object: JSONObject
    package let path: String

    package init(_ object: JSONObject, path: String) { (self.object, self.path) = (object, path) }

    package init(_ value: JSONValue, path: String) throws(ConfigError) {
        guard case .object(let o) = value else { throw ConfigError(field: path, "must be a JSON object") }
        self.init(o, path: path)
    }

    package func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    package func rejectUnknown(allowed: Set<String>) throws(ConfigError) {
        for key in object.keys where !allowed.contains(key) {
            throw ConfigError(
                field: field(key),
                "unknown setting (allowed here: \(allowed.sorted().joined(separator: ", ")))"
            )
        }
    }

    package func string(_ key: String) throws(ConfigError) -> String? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw ConfigError(field: field(key), "must be a string") }
        return s
    }

    package func requiredString(_ key: String) throws(ConfigError) -> String {
        guard let s = try string(key) else { throw ConfigError(field: field(key), "is required") }
        guard !s.isEmpty else { throw ConfigError(field: field(key), "must not be empty") }
        return s
    }

    package func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .bool(let b) = v else { throw ConfigError(field: field(key), "must be true or false") }
        return b
    }

    package func int64(_ key: String) throws(ConfigError) -> Int64? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .number(let n) = v, let i = Int64(n) else {
            throw ConfigError(field: field(key), "must be an integer")
        }
        return i
    }

    /// A size in bytes, an integer or text such as `"16MiB"` (``SizeText``), within `range`; `current` when absent.
    /// A duration in ms (`10m`, `7d`: ``ConfigReader/duration(_:)``), or `current` when the key is absent.
    package func duration(_ key: String, _ current: Int64, example: String) throws(ConfigError) -> Int64 {
        guard let text = try string(key) else { return current }
        guard let ms = Self.duration(text) else {
            throw ConfigError(field: field(key), "must be a duration such as \(example)")
        }
        return ms
    }

    /// An integer within `range`, or `current` when the key is absent.
    package func int(_ key: String, _ range: ClosedRange<Int64>, _ current: Int) throws(ConfigError) -> Int {
        guard let v = try int64(key) else { return current }
        guard range.contains(v) else {
            throw ConfigError(field: field(key), "must be \(range.lowerBound)…\(range.upperBound)")
        }
        return Int(v)
    }

    package func size(_ key: String, _ range: ClosedRange<Int64>, _ current: Int64) throws(ConfigError) -> Int64 {
        guard let v = object[key], !v.isNull else { return current }
        let bytes: Int64?
        switch v {
        case .number(let n): bytes = Int64(n)
        case .string(let text): bytes = SizeText.bytes(text)
        default: bytes = nil
        }
        guard let bytes else {
            throw ConfigError(field: field(key), "must be a size: bytes, or text such as \"16MiB\"")
        }
        guard range.contains(bytes) else {
            throw ConfigError(field: field(key), "must be \(range.lowerBound)…\(range.upperBound) bytes")
        }
        return bytes
    }

    package func strings(_ key: String) throws(ConfigError) -> [String]? {
        guard let v = object[key], !v.isNull else { return nil }
        // A single string is accepted where a list is expected (`"shared_secret_env": "VAR"`).
        if case .string(let s) = v { return [s] }
        guard case .array(let items) = v else { throw ConfigError(field: field(key), "must be a list of strings") }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else {
                throw ConfigError(field: "\(field(key))[\(i)]", "must be a string")
            }
            out.append(s)
        }
        return out
    }

    /// An `http://` or `https://` URL, or nil when the key is absent.
    package func url(_ key: String) throws(ConfigError) -> String? {
        guard let s = try string(key) else { return nil }
        guard s.hasPrefix("http://") || s.hasPrefix("https://") else {
            throw ConfigError(field: field(key), "must be an http:// or https:// URL")
        }
        return s
    }

    package func object(_ key: String) throws(ConfigError) -> ConfigReader? {
        guard let v = object[key], !v.isNull else { return nil }
        return try ConfigReader(v, path: field(key))
    }

    package func objects(_ key: String) throws(ConfigError) -> [ConfigReader]? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .array(let items) = v else { throw ConfigError(field: field(key), "must be a list of objects") }
        var out: [ConfigReader] = []
        for (i, item) in items.enumerated() { out.append(try ConfigReader(item, path: "\(field(key))[\(i)]")) }
        return out
    }

    /// The longest duration a setting may hold: 100 years. Times are computed as `now ± duration`, and no setting
    /// needs more, so a larger value is a typo (or an attempt to overflow that arithmetic), refused at start.
    public static let maxDurationMillis: Int64 = 36_500 * 86_400_000

    /// A positive duration no longer than ``maxDurationMillis``, else nil.
    public static func duration(_ text: String) -> Int64? {
        guard let ms = DurationText.milliseconds(text), ms > 0, ms <= maxDurationMillis else { return nil }
        return ms
    }
}
