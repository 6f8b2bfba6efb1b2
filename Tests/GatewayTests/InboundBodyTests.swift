import Gateway
import Store
import TestSupport
import Testing

@Suite struct InboundBodyTests {
    static func kind(_ text: String, bare: Bool = false) -> String {
        do {
            switch try InboundBody.classify(Array(text.utf8), allowBareTokens: bare) {
            case .v2Notification: return "v2"
            case .v1Notification: return "v1"
            case .signedTransaction: return "transaction"
            case .signedRenewalInfo: return "renewal"
            case .verifyReceiptResponse: return "receipt"
            }
        } catch {
            return error.code.rawValue
        }
    }

    @Test func detectsTheVersionFromTheBodysShape() {
        #expect(Self.kind(#"{"signedPayload":"a.b.c"}"#) == "v2")
        #expect(Self.kind(#"{"notification_type":"DID_RENEW","password":"x"}"#) == "v1")
        #expect(Self.kind(#"{"hello":"world"}"#) == "unknown_version")
        #expect(Self.kind(#"{"signedPayload":42}"#) == "malformed_body")
        #expect(Self.kind("not json {") == "malformed_body")
        #expect(Self.kind("[]") == "malformed_body")
        #expect(Self.kind("") == "malformed_body")
    }

    @Test func savedVerifyReceiptAnswersAreForTheVerifyCommandOnly() {
        #expect(Self.kind(#"{"status":21007}"#, bare: true) == "receipt")
        #expect(Self.kind(#"{"status":0,"receipt":{}}"#, bare: true) == "receipt")
        #expect(Self.kind(#"{"status":0,"receipt":{}}"#) == "unknown_version")
        #expect(Self.kind(#"{"status":0,"other":1}"#, bare: true) == "unknown_version")
    }

    @Test func bareTokensAreForTheVerifyCommandOnly() {
        #expect(Self.kind(#"{"signedTransaction":"a.b.c"}"#) == "unknown_version")
        #expect(Self.kind(#"{"signedTransaction":"a.b.c"}"#, bare: true) == "transaction")
        #expect(Self.kind(#"{"signedRenewalInfo":"a.b.c"}"#, bare: true) == "renewal")
    }

    @Test func rawJWSTextIsClassifiedByItsPayload() throws {
        let tx = try Fixtures.token("v2/tx-auto-renewable-sandbox-2022-gopay-order.json", member: "signedTransaction")
        let ri = try Fixtures.token("v2/renewal-sandbox-2022-gopay.json", member: "signedRenewalInfo")
        let n = try Fixtures.token("v2/notif-test-sandbox-2025.json")
        #expect(Self.kind(String(decoding: tx, as: UTF8.self) + "\n", bare: true) == "transaction")
        #expect(Self.kind(String(decoding: ri, as: UTF8.self), bare: true) == "renewal")
        #expect(Self.kind(String(decoding: n, as: UTF8.self), bare: true) == "v2")
    }

    @Test func bodiesOverOneMebibyteAreRefusedBeforeParsing() {
        let body = "{\"signedPayload\":\"" + String(repeating: "A", count: 1024 * 1024) + "\"}"
        #expect(Self.kind(body) == "body_too_large")
    }
}
