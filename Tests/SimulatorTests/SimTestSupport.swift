import Canonical
import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter

/// The simulator unit tests' own helpers beside the shared fixtures (SimulatorTestSupport): error codes, payloads
/// and decoders for what the fake Apple answers.
extension Sim {
    /// The stable V2 error code `body` fails with; nil when it succeeds.
    static func v2Code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as V2AdapterError {
            return error.code.rawValue
        } catch {
            return "not a V2AdapterError: \(error)"
        }
    }

    /// The subscription as the App Store knows it after the last step of `name`.
    static func finalSubscription(_ name: String, pki: SimulatorPKI) throws -> SimSubscription {
        try #require(try plan(name, pki: pki).emissions.last).subscription
    }

    /// The payload of a compact JWS, decoded without any verification (to look inside).
    static func payload<T: Decodable>(_ jws: String, as type: T.Type) throws -> T {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        return try JSONDecoder().decode(type, from: Data(try Base64.decode(Array(parts[1].utf8), alphabet: .url)))
    }

    /// The protected header of a compact JWS as a JSON object.
    static func header(_ jws: String) throws -> [String: Any] {
        let first = try #require(jws.split(separator: ".").first)
        let bytes = try Base64.decode(Array(first.utf8), alphabet: .url)
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: FakeAppleResponse) throws -> T {
        try JSONDecoder().decode(type, from: Data(response.body))
    }

    static func json(_ value: some Encodable) throws -> [UInt8] { Array(try JSONEncoder().encode(value)) }

}

/// One fake Apple over its own state file, with a fixed clock.
struct FakeAppleHarness {
    let pki: SimulatorPKI
    let store: SimStateStore
    let apple: FakeApple
    let now: Int64

    init(
        pki: SimulatorPKI,
        now: Int64,
        deliverTest: (@Sendable (_ token: String, _ signedPayload: String) -> Void)? = nil
    ) {
        self.pki = pki
        self.now = now
        store = SimStateStore(folder: pki.folder)
        apple = FakeApple(pki: pki, now: { now }, deliverTest: deliverTest)
    }

    func put(_ s: SimSubscription) throws {
        try store.update { $0.subscriptions[s.originalTransactionID] = s }
    }

    // MARK: verifyReceipt

    func verifyReceipt(sandbox: Bool, body: [UInt8]) -> FakeAppleResponse {
        apple.handle(
            FakeAppleRequest(method: "POST", path: sandbox ? "/sandbox/verifyReceipt" : "/verifyReceipt", body: body)
        )
    }

    func verifyReceipt(sandbox: Bool, receipt: String, password: String? = Sim.secret) throws -> VerifyReceiptResponse {
        var request: [String: String] = ["receipt-data": receipt]
        request["password"] = password
        let response = verifyReceipt(sandbox: sandbox, body: try Sim.json(request))
        #expect(response.status == 200, "verifyReceipt always answers HTTP 200")
        return try Sim.decode(VerifyReceiptResponse.self, response)
    }

    // MARK: App Store Server API

    /// A valid bearer token for `bundleID`, issued 10 s ago for 10 minutes.
    func token(bundleID: String = Sim.bundleID, key: PrivateKey? = nil) throws -> String {
        let seconds = now / 1000
        return try AppStoreAPIToken(
            keyID: SimulatorPKI.apiKeyID,
            issuerID: SimulatorPKI.issuerID,
            bundleID: bundleID,
            issuedAt: seconds - 10,
            expiresAt: seconds + 600
        ).signed(with: key ?? pki.apiKey)
    }

    func api(
        _ method: String,
        _ path: String,
        query: [String: String] = [:],
        token: String?,
        body: [UInt8] = []
    ) -> FakeAppleResponse {
        apple.handle(
            FakeAppleRequest(
                method: method,
                path: path,
                query: query,
                authorization: token.map { "Bearer " + $0 },
                body: body
            )
        )
    }

    func get(_ path: String, query: [String: String] = [:], bundleID: String = Sim.bundleID) throws -> FakeAppleResponse
    {
        api("GET", path, query: query, token: try token(bundleID: bundleID))
    }

    func post(
        _ path: String,
        query: [String: String] = [:],
        body: [UInt8] = [],
        bundleID: String = Sim.bundleID
    ) throws -> FakeAppleResponse {
        api("POST", path, query: query, token: try token(bundleID: bundleID), body: body)
    }

    /// Apple's `errorCode`, asserting the body is Apple's error shape.
    static func errorCode(_ response: FakeAppleResponse) throws -> Int64 {
        try Sim.decode(AppStoreAPIErrorBody.self, response).errorCode
    }
}

/// A compact JWT with arbitrary header and payload JSON, ES256-signed with `key` (raw R‖S), for crafted tokens.
enum CraftedJWT {
    static func segment(_ json: String) -> String { Base64.encode(Array(json.utf8), alphabet: .url) }

    static func make(
        header: String = #"{"alg":"ES256","kid":"SIMKEY0001","typ":"JWT"}"#,
        payload: String,
        key: PrivateKey
    ) throws -> String {
        let input = segment(header) + "." + segment(payload)
        return input + "." + Base64.encode(try key.signES256(Array(input.utf8)), alphabet: .url)
    }

    static func claims(
        iss: String = SimulatorPKI.issuerID,
        iat: Int64,
        exp: Int64,
        aud: String? = AppStoreAPIToken.audience,
        bid: String = Sim.bundleID
    ) -> String {
        var members = [#""iss":"\#(iss)""#, #""iat":\#(iat)"#, #""exp":\#(exp)"#]
        if let aud { members.append(#""aud":"\#(aud)""#) }
        members.append(#""bid":"\#(bid)""#)
        return "{" + members.joined(separator: ",") + "}"
    }
}

/// Requests as Apple's Python library (`app-store-server-library` 3.1.2, over `requests`) puts them on the wire, read
/// from its source and from its requests captured on a socket: the bearer token PyJWT signs, list filters as a repeated
/// name (`status=1&status=3`, `productId=a&productId=b+c`), Python's `True` / `False`, and JSON bodies from
/// `json.dumps` (`{"startDate": 1, "endDate": 2}`, members that are not set left out).
enum PythonClient {
    /// Header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, payload `{"bid","iss","aud","exp"}`: no `iat`, `exp` five
    /// minutes after `now` (ms).
    static func token(now: Int64, key: PrivateKey, bundleID: String = Sim.bundleID) throws -> String {
        try CraftedJWT.make(
            payload:
                #"{"bid":"\#(bundleID)","iss":"\#(SimulatorPKI.issuerID)","aud":"appstoreconnect-v1","exp":\#(now / 1000 + 300)}"#,
            key: key
        )
    }

    /// The request for `target` as sent (`/inApps/v2/history/1?productType=A&productType=B`): the query split and
    /// decoded the way the server decodes it (`+` is a space, `%XX` a byte), every member kept in order.
    static func request(_ method: String, _ target: String, token: String, body: String = "") -> FakeAppleRequest {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        func decoded(_ text: Substring) -> String {
            String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
        }
        var items: [FakeAppleRequest.QueryItem] = []
        for member in parts.count == 2 ? parts[1].split(separator: "&") : [] {
            let pair = member.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            items.append(FakeAppleRequest.QueryItem(decoded(pair[0]), pair.count == 2 ? decoded(pair[1]) : ""))
        }
        return FakeAppleRequest(
            method: method,
            path: String(parts[0]),
            queryItems: items,
            authorization: "Bearer " + token,
            body: Array(body.utf8)
        )
    }
}

extension FakeAppleHarness {
    /// `target` asked the way Apple's Python library asks it, with its token for `bundleID`.
    func python(
        _ method: String,
        _ target: String,
        body: String = "",
        bundleID: String = Sim.bundleID
    ) throws -> FakeAppleResponse {
        apple.handle(
            PythonClient.request(
                method,
                target,
                token: try PythonClient.token(now: now, key: pki.apiKey, bundleID: bundleID),
                body: body
            )
        )
    }

    /// The transaction ids of a history page, in the order answered (its signed items decoded without verification).
    static func transactionIDs(_ response: FakeAppleResponse) throws -> [String] {
        try Sim.decode(HistoryResponse.self, response).signedTransactions.map {
            try #require(try Sim.payload($0, as: TransactionPayload.self).transactionID)
        }
    }
}
