import FoundationEssentials
import HTTPServer
import ServiceKit
import TestSupport
import Testing

@testable import Gateway

/// The listeners' settings from the config: addresses, limits, TLS files, and a port already taken.
@Suite struct ListenerSettingsTests {
    @Test(
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1", 8080), ("0.0.0.0:0", "0.0.0.0", 0), ("[::1]:443", "[::1]", 443),
            (":9", "", 9),
        ] as [(String, String, UInt16)]
    )
    func addresses(_ text: String, _ host: String, _ port: UInt16) throws {
        let (h, p) = try ListenerSettings.address(text, field: "listen")
        #expect(h == host && p == port)
    }

    @Test(arguments: ["localhost", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:http", "127.0.0.1:-1"])
    func badAddressesNameTheField(_ text: String) {
        #expect(throws: ConfigError(field: "admin.listen", "must be HOST:PORT, e.g. 127.0.0.1:8080")) {
            try ListenerSettings.address(text, field: "admin.listen")
        }
    }

    @Test func thePublicListenerTakesTheLimitsAndTheAdminOneTwoThreads() throws {
        let config = try GatewayConfigTests.parse(
            """
            { "listen": "0.0.0.0:8443", "admin": { "listen": "127.0.0.1:9091" },
              "limits": { "http_threads": 3, "connections": 50, "connections_per_address": 5, "request_deadline_seconds": 7 } }
            """
        )
        let main = try ListenerSettings.main(config)
        #expect(main.field == "listen" && main.address == "0.0.0.0:8443")
        #expect(
            main.configuration.host == "0.0.0.0" && main.configuration.port == 8443 && main.configuration.threads == 3
        )
        #expect(main.configuration.connectionLimit == 50 && main.configuration.connectionsPerAddressLimit == 5)
        #expect(
            main.configuration.requestDeadlineSeconds == 7
                && main.configuration.bodyBufferBudgetBytes == config.limits.bodyBufferBytes
        )
        #expect(main.configuration.bodyBufferPerAddressBytes == config.limits.effectiveBodyBufferPerAddressBytes)
        #expect(main.configuration.tls == nil)
        let admin = try ListenerSettings.admin(config)
        #expect(
            admin.field == "admin.listen" && admin.configuration.host == "127.0.0.1" && admin.configuration.port == 9091
        )
        #expect(admin.configuration.threads == 2 && admin.configuration.tls == nil)
        // The admin listener's own small budget: connections that never deliver a request are pushed out by new ones
        // and closed within seconds; the public listener keeps refusing past its limits, as configured.
        let a = admin.configuration
        #expect(a.connectionLimit == 32 && a.connectionsPerAddressLimit == 32 && a.evictsWaitingConnections)
        #expect(a.headerDeadlineSeconds == 5 && a.requestDeadlineSeconds == 10 && a.connectionTimeoutSeconds == 10)
        // Its clients share one address: no share of the body budget per address there.
        #expect(a.bodyBufferPerAddressBytes == 0)
        #expect(!main.configuration.evictsWaitingConnections && main.configuration.headerDeadlineSeconds == 0)
        // The admin API's security headers also go on the answers the admin listener gives itself (413, 503).
        #expect(
            a.defaultHeaders.map { "\($0.name): \($0.value)" }
                == AdminAPI.securityHeaders.map { "\($0.name): \($0.value)" }
        )
        #expect(main.configuration.defaultHeaders.isEmpty)
    }

    @Test func tlsFilesAreReadWhenTheListenerIsSetUp() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let json = #"{ "listen_tls": { "cert_file": "cert.pem", "key_file": "key.pem" } }"#
        let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
        #expect(throws: ConfigError(field: "listen_tls", "cannot read the certificate or key file")) {
            try ListenerSettings.main(config)
        }
        try Data("CERT".utf8).write(to: URL(filePath: directory + "/cert.pem"))
        #expect(throws: ConfigError(field: "listen_tls", "cannot read the certificate or key file")) {
            try TLSFiles(config)?.load()
        }
        try Data("KEY".utf8).write(to: URL(filePath: directory + "/key.pem"))
        let tls = try #require(try ListenerSettings.main(config).configuration.tls)
        #expect(tls.certificatePEM == "CERT" && tls.privateKeyPEM == "KEY")
        #expect(TLSFiles(try GatewayConfigTests.parse("{}")) == nil)
    }

    @Test func aPortInUseIsAConfigErrorNamingTheField() throws {
        let first = try ListenerSettings.admin(GatewayConfigTests.parse(#"{ "admin": { "listen": "127.0.0.1:0" } }"#))
            .listen { _ in ServerResponse(status: 200) }
        defer { first.stop() }
        let taken = "127.0.0.1:\(first.port)"
        let config = try GatewayConfigTests.parse(#"{ "admin": { "listen": "\#(taken)" } }"#)
        #expect {
            try ListenerSettings.admin(config).listen { _ in ServerResponse(status: 200) }
        } throws: { error in
            let e = error as? ConfigError
            return e?.field == "admin.listen" && e?.message.hasPrefix("cannot listen on \(taken): ") == true
        }
    }
}
