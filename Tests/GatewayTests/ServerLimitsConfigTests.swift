import Gateway
import HTTPServer
import ServiceKit
import Store
import Testing

/// The `limits` section of the config and the HTTP server's own defaults agree.
@Suite struct ServerLimitsConfigTests {
    @Test func limitsAreReadAndDefaultToTheServersOwn() throws {
        let text = """
            { "limits": { "connections": 2000, "connections_per_address": 500, "request_deadline_seconds": 20,
                          "body_buffer_bytes": 33554432 } }
            """
        let limits = try GatewayConfig.parse(Array(text.utf8), baseDirectory: "/tmp").limits
        #expect(limits.connections == 2_000 && limits.connectionsPerAddress == 500)
        #expect(limits.requestDeadlineSeconds == 20 && limits.bodyBufferBytes == 32 << 20)
        let defaults = GatewayConfig().limits
        let server = HTTPServer.Configuration()
        #expect(defaults.connections == Int(server.connectionLimit))
        #expect(defaults.connectionsPerAddress == Int(server.connectionsPerAddressLimit))
        #expect(defaults.requestDeadlineSeconds == Int(server.requestDeadlineSeconds))
        #expect(defaults.bodyBufferBytes == server.bodyBufferBudgetBytes)
        #expect(throws: ConfigError.self) {
            try GatewayConfig.parse(Array(#"{"limits":{"body_buffer_bytes":1000}}"#.utf8), baseDirectory: "/tmp")
        }
    }

    @Test func anAddressShareOfTheBodyBudgetIsAnEighthOfItUnlessTheFileSaysOtherwise() throws {
        func limits(_ text: String) throws -> GatewayConfig.Limits {
            try GatewayConfig.parse(Array(#"{"limits":{\#(text)}}"#.utf8), baseDirectory: "/tmp").limits
        }
        // The default follows the budget, and is the server's own with the default budget.
        #expect(GatewayConfig().limits.effectiveBodyBufferPerAddressBytes == 8 << 20)
        #expect(
            GatewayConfig().limits.effectiveBodyBufferPerAddressBytes
                == HTTPServer.Configuration().bodyBufferPerAddressBytes
        )
        #expect(try limits(#""body_buffer_bytes":"256MiB""#).effectiveBodyBufferPerAddressBytes == 32 << 20)
        // Never less than one body of the largest size.
        #expect(try limits(#""body_buffer_bytes":"2MiB""#).effectiveBodyBufferPerAddressBytes == 1 << 20)
        // Set, in either order with the budget; 0 switches it off (behind a reverse proxy).
        let set = try limits(#""body_buffer_per_address_bytes":"24MiB","body_buffer_bytes":"32MiB""#)
        #expect(set.effectiveBodyBufferPerAddressBytes == 24 << 20 && set.bodyBufferBytes == 32 << 20)
        #expect(try limits(#""body_buffer_per_address_bytes":0"#).effectiveBodyBufferPerAddressBytes == 0)
        for bad in [#""body_buffer_per_address_bytes":1000"#, #""body_buffer_per_address_bytes":-1"#] {
            #expect(throws: ConfigError.self, "\(bad)") { try limits(bad) }
        }
    }
}
