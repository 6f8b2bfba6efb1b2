public import Crypto
import WireJSON

/// Signs compact JWS at run time with the repository's test PKI (`Fixtures/test-pki`), the way
/// `Tests/TestSupport/TestJWS.swift` builds tokens: header `{"alg":"ES256","x5c":[…]}` with standard-base64 DER,
/// base64url segments without padding, a raw 64-byte R‖S signature.
public struct TestSigner: Sendable {
    public let leafKey: PrivateKey
    public let leaf: [UInt8]
    public let intermediate: [UInt8]
    public let root: [UInt8]

    public init() {
        leaf = FuzzSupport.fixture("Fixtures/test-pki/leaf.der")
        intermediate = FuzzSupport.fixture("Fixtures/test-pki/intermediate.der")
        root = FuzzSupport.fixture("Fixtures/test-pki/root.der")
        do { leafKey = try PrivateKey(pem: FuzzSupport.fixtureText("Fixtures/test-pki/leaf.key.pem")) } catch {
            fatalError("fuzz: cannot read the test leaf key: \(error)")
        }
    }

    /// `{"alg":"ES256","x5c":[…]}` with `certificates` (DER).
    public static func header(alg: String = "ES256", certificates: [[UInt8]]) -> [UInt8] {
        let x5c = certificates.map { "\"" + Base64.encode($0, alphabet: .standard) + "\"" }.joined(separator: ",")
        return Array("{\"alg\":\"\(alg)\",\"x5c\":[\(x5c)]}".utf8)
    }

    /// The standard chain: leaf, intermediate, root.
    public var standardHeader: [UInt8] { Self.header(certificates: [leaf, intermediate, root]) }

    /// `header.payload.signature`, signed with the test leaf key whatever the header says.
    public func sign(header: [UInt8], payload: [UInt8]) -> [UInt8] {
        let input = Base64.encode(header, alphabet: .url) + "." + Base64.encode(payload, alphabet: .url)
        let signature: [UInt8]
        do { signature = try leafKey.signES256(Array(input.utf8)) } catch {
            fatalError("fuzz: signing failed: \(error)")
        }
        return Array((input + "." + Base64.encode(signature, alphabet: .url)).utf8)
    }

    public func sign(payload: [UInt8]) -> [UInt8] { sign(header: standardHeader, payload: payload) }

    /// The payload with every nested token the input spells as a JSON object (`data.signedTransactionInfo`,
    /// `data.signedRenewalInfo`, `appData.signedAppTransactionInfo`) replaced by that object signed as a JWS. Input
    /// that is not a JSON object, or names no nested object, is returned unchanged (so its own bytes get signed).
    public func signNested(_ payload: [UInt8]) -> [UInt8] {
        guard case .object(let top)? = try? JSONParser.parse(payload) else { return payload }
        var changed = false
        var members: [(key: String, value: JSONValue)] = []
        for (key, value) in top {
            guard key == "data" || key == "appData", case .object(let inner) = value else {
                members.append((key, value))
                continue
            }
            var innerMembers: [(key: String, value: JSONValue)] = []
            for (k, v) in inner {
                if ["signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"].contains(k),
                    case .object = v
                {
                    innerMembers.append(
                        (k, .string(String(decoding: sign(payload: v.canonicalBytes()), as: UTF8.self)))
                    )
                    changed = true
                } else {
                    innerMembers.append((k, v))
                }
            }
            members.append((key, .object(JSONObject(innerMembers))))
        }
        return changed ? JSONValue.object(JSONObject(members)).canonicalBytes() : payload
    }
}
