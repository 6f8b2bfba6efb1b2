/// Decodes `Decodable` types from a parsed ``JSONValue`` — the synthesized `Codable` of the wire models, without a
/// second parse. Strict: a JSON string never decodes as a number or the reverse (V1's stringly-typed fields have
/// their own lenient wrapper types).
public struct JSONValueDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: []))
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        try decode(type, from: try JSONParser.parse(bytes))
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { (self.stringValue, self.intValue) = (stringValue, nil) }
    init(intValue: Int) { (self.stringValue, self.intValue) = (String(intValue), intValue) }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let o) = value else { throw mismatch([String: String].self, value, codingPath) }
        return KeyedDecodingContainer(Keyed<Key>(object: o, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let a) = value else { throw mismatch([String].self, value, codingPath) }
        return Unkeyed(items: a, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        Single(value: value, codingPath: codingPath)
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    let found: String
    switch value {
    case .null: found = "null"
    case .bool: found = "a boolean"
    case .number: found = "a number"
    case .string: found = "a string"
    case .array: found = "an array"
    case .object: found = "an object"
    }
    return DecodingError.typeMismatch(
        type,
        .init(codingPath: path, debugDescription: "expected \(type), found \(found)")
    )
}

// `path` is an autoclosure: building the coding path allocates, and it is only needed for an error.
private func string(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard case .string(let s) = value else { throw mismatch(String.self, value, path()) }
    return s
}

private func bool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    guard case .bool(let b) = value else { throw mismatch(Bool.self, value, path()) }
    return b
}

private func integer<I: FixedWidthInteger>(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
    guard case .number(let n) = value, let v = I(n) else { throw mismatch(I.self, value, path()) }
    return v
}

private func double(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
    guard case .number(let n) = value, let v = Double(n) else { throw mismatch(Double.self, value, path()) }
    return v
}

/// Generic entry (array elements, nested models): primitives by type, everything else through `init(from:)`.
private func unbox<T: Decodable>(_ type: T.Type, _ value: JSONValue, _ path: [any CodingKey]) throws -> T {
    switch type {
    case is String.Type: return try string(value, path) as! T
    case is Bool.Type: return try bool(value, path) as! T
    case is Int64.Type: return try integer(value, path) as Int64 as! T
    case is Int.Type: return try integer(value, path) as Int as! T
    case is Int32.Type: return try integer(value, path) as Int32 as! T
    case is UInt64.Type: return try integer(value, path) as UInt64 as! T
    // Every other width too: a primitive missing here went to `T(from:)`, which asks this container again — endless
    // recursion and a stack overflow (found by the JSON fuzz target).
    case is Int8.Type: return try integer(value, path) as Int8 as! T
    case is Int16.Type: return try integer(value, path) as Int16 as! T
    case is UInt.Type: return try integer(value, path) as UInt as! T
    case is UInt8.Type: return try integer(value, path) as UInt8 as! T
    case is UInt16.Type: return try integer(value, path) as UInt16 as! T
    case is UInt32.Type: return try integer(value, path) as UInt32 as! T
    case is Float.Type:
        guard case .number(let n) = value, let f = Float(n) else { throw mismatch(Float.self, value, path) }
        return f as! T
    case is Double.Type: return try double(value, path) as! T
    case is JSONValue.Type: return value as! T
    default: return try T(from: ValueDecoder(value: value, codingPath: path))
    }
}

private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func child(_ key: Key) throws -> JSONValue {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing member"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { object[key.stringValue]?.isNull ?? true }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try unbox(type, child(key), codingPath + [key])
    }
    // Absent and null both mean "not carried" for optional members.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let v = object[key.stringValue], !v.isNull else { return nil }
        return try unbox(type, v, codingPath + [key])
    }

    // Concrete primitives: the synthesized `init(from:)` of every wire model calls these; going through the
    // generic path would cost a dynamic cast per member.
    private func present(_ key: Key) -> JSONValue? {
        guard let v = object[key.stringValue], !v.isNull else { return nil }
        return v
    }
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decode(_ type: String.Type, forKey key: Key) throws -> String { try string(child(key), path(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try bool(child(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(child(key), path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(child(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(child(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try double(child(key), path(key)) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { v throws in try string(v, path(key)) }
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { v throws in try bool(v, path(key)) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try present(key).map { v throws in try integer(v, path(key)) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try present(key).map { v throws in try integer(v, path(key)) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try present(key).map { v throws in try integer(v, path(key)) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { v throws in try double(v, path(key)) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ValueDecoder(value: child(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: child(key), codingPath: codingPath + [key]).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: .object(object), codingPath: codingPath)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) { (self.items, self.codingPath) = (items, codingPath) }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next() throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                JSONValue.self,
                .init(codingPath: codingPath, debugDescription: "array exhausted")
            )
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [AnyKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next()
        return try unbox(type, v, path)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let (v, path) = try next()
        return ValueDecoder(value: v, codingPath: path)
    }
}

private struct Single: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    func decodeNil() -> Bool { value.isNull }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unbox(type, value, codingPath) }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        if let d = decoder as? ValueDecoder {
            self = d.value
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .number(String(i))
        } else if let d = try? c.decode(Double.self) {
            self = .number(String(d))
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            let o = try c.decode([String: JSONValue].self)
            self = .object(JSONObject(o.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .number(let n):
            var c = encoder.singleValueContainer()
            if let i = Int64(n) { try c.encode(i) } else { try c.encode(Double(n) ?? 0) }
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .array(let a):
            var c = encoder.unkeyedContainer()
            for v in a { try c.encode(v) }
        case .object(let o):
            var c = encoder.container(keyedBy: AnyKey.self)
            for m in o { try c.encode(m.value, forKey: AnyKey(stringValue: m.key)) }
        }
    }
}
