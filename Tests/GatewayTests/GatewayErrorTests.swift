import Gateway
import Store
import Testing
import V1Adapter
import V2Adapter

@Suite struct GatewayErrorTests {
    @Test func everyAdapterCodeHasAGatewayCode() {
        for code in V1AdapterError.Code.all {
            #expect(GatewayError.Code(rawValue: code.rawValue) != nil, "V1 code \(code) has no GatewayError.Code")
        }
        for code in V2AdapterError.Code.all {
            #expect(GatewayError.Code(rawValue: code.rawValue) != nil, "V2 code \(code) has no GatewayError.Code")
        }
        for code in BodyError.Code.all {
            #expect(
                GatewayError.Code(rawValue: code.rawValue) != nil,
                "body code \(code.rawValue) has no GatewayError.Code"
            )
        }
    }

    @Test func forgeriesAreRefusedIntoTheUntrustedLaneAndUnservableGenuineDataIsRetried() {
        // Signature and chain failures: 403, untrusted.
        for code: GatewayError.Code in [
            .badSignature, .untrustedRoot, .certificateExpired, .staleNotification, .missingAppleMarker,
        ] {
            #expect(Disposition(GatewayError(code, "")) == Disposition(status: 403, lane: .untrusted), "\(code)")
        }
        // Apple-signed but unservable until the config changes: 503 (Apple retries), kept in the genuine lane.
        #expect(Disposition(GatewayError(.unknownBundle, ""), version: .v2) == Disposition(status: 503, lane: .genuine))
        // A V1 body's bundle is a claim nobody authenticated: retried, but only ever in the untrusted lane.
        #expect(
            Disposition(GatewayError(.unknownBundle, ""), version: .v1) == Disposition(status: 503, lane: .untrusted)
        )
        #expect(Disposition(GatewayError(.badSharedSecret, "")) == Disposition(status: 401, lane: .untrusted))
        #expect(Disposition(GatewayError(.bodyTooLarge, "")) == Disposition(status: 413, lane: nil))
        #expect(Disposition(GatewayError(.storeUnavailable, "")) == Disposition(status: 503, lane: nil))
        // A nested token: its cause decides.
        #expect(
            Disposition(GatewayError(.nestedJWSInvalid, "", cause: .environmentMismatch))
                == Disposition(status: 503, lane: .genuine)
        )
        #expect(
            Disposition(GatewayError(.nestedJWSInvalid, "", cause: .malformed))
                == Disposition(status: 400, lane: .untrusted)
        )
        #expect(
            Disposition(GatewayError(.nestedJWSInvalid, "", cause: .badSignature))
                == Disposition(status: 403, lane: .untrusted)
        )
    }

    @Test func everyCodeHasAnErrorStatus() {
        for code in GatewayError.Code.allCases {
            let status = Disposition(GatewayError(code, "")).status
            #expect((400..<600).contains(status), "\(code) → \(status)")
        }
    }

    @Test func nestedFailuresKeepTheirCauseOnTheWire() {
        let e = GatewayError(V2AdapterError(.nestedJWSInvalid, "signedTransactionInfo: bad", cause: .badSignature))
        #expect(
            e.code == .nestedJWSInvalid && e.cause == .badSignature && e.wireCode == "nested_jws_invalid:bad_signature"
        )
    }
}
