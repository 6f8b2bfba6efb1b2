import Gateway
import HTTPServer
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
}
