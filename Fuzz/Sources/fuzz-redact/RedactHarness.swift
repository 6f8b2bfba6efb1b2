import FuzzSupport
import WireJSON

/// `SecretRedactor`: what the gateway runs over every refused body before it is quarantined or logged, and over every
/// accepted one before it is journaled (docs/threat-model.md, "Secret disclosure").
///
/// Input: a mode byte, then the bytes. Bit 0 picks the secrets: 0 JSON-safe ones (a V1 shared secret, a webhook
/// secret, one with non-ASCII characters), 1 those plus one holding a quote and a backslash. Bit 1 also drops
/// `password` values, as a quarantined body gets. Invariants: nothing of any secret is left, neither as its bytes
/// nor through JSON escapes nor in any string of the output when it parses; redacting again changes nothing; with
/// JSON-safe secrets, an input that parses as JSON gives an output that parses too, with the same structure.
/// Bit 2 also takes the head of the bytes as the delivery log keeps an answer's (`redactedPrefix`, a byte after the
/// mode its length, then `redactingWebhookSignatures`): never longer than asked, the start of the whole bytes' redaction,
/// nothing of a secret, no signature-shaped run left, the same again when done twice.
@main enum RedactFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

private let safeSecrets: [(String, String)] = [
    ("APP_SECRET", "0123456789abcdef0123456789abcdef"),
    ("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ("UNICODE_SECRET", "sécret-ünïcode-välue-😀-2025"),
]
private let hostileSecret = ("HOSTILE_SECRET", #"quote"and\backslash/secret"#)

private func redactor(_ secrets: [(String, String)]) -> SecretRedactor {
    SecretRedactor(secrets.map { SecretRedactor.Secret(name: $0.0, value: Array($0.1.utf8)) })
}

private let safe = redactor(safeSecrets)
private let hostile = redactor(safeSecrets + [hostileSecret])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let headLength = mode & 4 != 0 ? Int(input.byte()) : 0
    let bytes = input.rest()
    let jsonSafe = mode & 1 == 0
    let r = jsonSafe ? safe : hostile
    let secrets = jsonSafe ? safeSecrets : safeSecrets + [hostileSecret]

    var out = r.redact(bytes)
    if mode & 2 != 0 { out = SecretRedactor.redactingPasswordValues(out) }
    if FuzzSupport.debugging { print("out: \(String(decoding: out, as: UTF8.self))") }

    if r.occurs(in: out) { FuzzSupport.fail("a secret is left after redaction") }
    for (_, secret) in secrets where contains(out, Array(secret.utf8)) {
        FuzzSupport.fail("a secret's bytes are left after redaction")
    }
    if r.redact(out) != out { FuzzSupport.fail("redacting again changed the output") }
    if mode & 2 != 0, SecretRedactor.redactingPasswordValues(out) != out {
        FuzzSupport.fail("dropping password values again changed the output")
    }
    let parsedOut = try? JSONParser.parse(out)
    if let parsedOut {
        forEachString(parsedOut) { s in
            for (_, secret) in secrets where s.contains(secret) {
                FuzzSupport.fail("a string of the output holds a secret")
            }
        }
    }
    if jsonSafe, let parsedIn = try? JSONParser.parse(bytes) {
        guard let parsedOut else { FuzzSupport.fail("a JSON input gave an output that does not parse") }
        if shape(parsedIn) != shape(parsedOut) { FuzzSupport.fail("redaction changed the document's structure") }
    }
    if mode & 4 != 0 { checkHead(bytes, maxLength: headLength, r, secrets) }
    // Strings read from a body (claims, reasons) go the same way.
    let text = String(decoding: bytes, as: UTF8.self)
    let redactedText = r.redact(text)
    for (_, secret) in secrets where redactedText.contains(secret) {
        FuzzSupport.fail("a secret is left in redacted text")
    }
    return 0
}

/// An answer's head as the delivery log keeps it.
private func checkHead(_ bytes: [UInt8], maxLength: Int, _ r: SecretRedactor, _ secrets: [(String, String)]) {
    let head = r.redactedPrefix(bytes, maxLength: maxLength)
    if head.count > maxLength { FuzzSupport.fail("a head longer than asked") }
    if !r.redact(bytes).starts(with: head) { FuzzSupport.fail("a head that is not the start of the redacted bytes") }
    let kept = SecretRedactor.redactingWebhookSignatures(head)
    for (_, secret) in secrets where contains(kept, Array(secret.utf8)) {
        FuzzSupport.fail("a secret's bytes are left in a head")
    }
    if SecretRedactor.redactingWebhookSignatures(kept) != kept {
        FuzzSupport.fail("finding signatures again changed the head")
    }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
    }
    return false
}

private func forEachString(_ v: JSONValue, _ body: (String) -> Void) {
    switch v {
    case .string(let s): body(s)
    case .array(let items): for item in items { forEachString(item, body) }
    case .object(let o):
        for (key, value) in o.members {
            body(key)
            forEachString(value, body)
        }
    default: break
    }
}

/// The document with every string replaced by one placeholder: what redaction must keep.
private func shape(_ v: JSONValue) -> JSONValue {
    switch v {
    case .string: return .string("")
    case .array(let items): return .array(items.map(shape))
    case .object(let o): return .object(JSONObject(o.members.map { ("", shape($0.value)) }))
    default: return v
    }
}
