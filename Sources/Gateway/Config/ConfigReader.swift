internal import Canonical
internal import WireJSON

/// Typed access to one JSON object of the config file, with errors that name the field's full path and a check
/// that no unknown member (a typo) is silently ignored.
struct ConfigReader {
    let object: JSONObject
    let path: String

    init(_ object: JSONObject, path: String) { (self.object, self.path) = (object, path) }

    init(_ value: JSONValue, path: String) throws(ConfigError) {
        guard case .object(let o) = value else { throw ConfigError(field: path, "must be a JSON object") }
        self.init(o, path: path)
    }

    func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func rejectUnknown(allowed: Set<String>) throws(ConfigError) {
        for key in object.keys where !allowed.contains(key) {
            throw ConfigError(
                field: field(key),
                "unknown setting (allowed here: \(allowed.sorted().joined(separator: ", ")))"
            )
        }
    }

    func string(_ key: String) throws(ConfigError) -> String? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw ConfigError(field: field(key), "must be a string") }
        return s
    }

    func requiredString(_ key: String) throws(ConfigError) -> String {
        guard let s = try string(key) else { throw ConfigError(field: field(key), "is required") }
        guard !s.isEmpty else { throw ConfigError(field: field(key), "must not be empty") }
        return s
    }

    func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .bool(let b) = v else { throw ConfigError(field: field(key), "must be true or false") }
        return b
    }

    func int64(_ key: String) throws(ConfigError) -> Int64? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .number(let n) = v, let i = Int64(n) else {
            throw ConfigError(field: field(key), "must be an integer")
        }
        return i
    }

    /// A size in bytes, an integer or text such as `"16MiB"` (``SizeText``), within `range`; `current` when absent.
    /// A duration in ms (`10m`, `7d`: ``GatewayConfig/configDuration(_:)``), or `current` when the key is absent.
    func duration(_ key: String, _ current: Int64, example: String) throws(ConfigError) -> Int64 {
        guard let text = try string(key) else { return current }
        guard let ms = GatewayConfig.configDuration(text) else {
            throw ConfigError(field: field(key), "must be a duration such as \(example)")
        }
        return ms
    }

    /// An integer within `range`, or `current` when the key is absent.
    func int(_ key: String, _ range: ClosedRange<Int64>, _ current: Int) throws(ConfigError) -> Int {
        guard let v = try int64(key) else { return current }
        guard range.contains(v) else {
            throw ConfigError(field: field(key), "must be \(range.lowerBound)…\(range.upperBound)")
        }
        return Int(v)
    }

    func size(_ key: String, _ range: ClosedRange<Int64>, _ current: Int64) throws(ConfigError) -> Int64 {
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

    func strings(_ key: String) throws(ConfigError) -> [String]? {
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

    func object(_ key: String) throws(ConfigError) -> ConfigReader? {
        guard let v = object[key], !v.isNull else { return nil }
        return try ConfigReader(v, path: field(key))
    }

    func objects(_ key: String) throws(ConfigError) -> [ConfigReader]? {
        guard let v = object[key], !v.isNull else { return nil }
        guard case .array(let items) = v else { throw ConfigError(field: field(key), "must be a list of objects") }
        var out: [ConfigReader] = []
        for (i, item) in items.enumerated() { out.append(try ConfigReader(item, path: "\(field(key))[\(i)]")) }
        return out
    }
}
