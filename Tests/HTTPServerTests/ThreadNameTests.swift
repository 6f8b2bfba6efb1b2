import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing
import Threads

/// The gateway names the threads it starts, so that `top -H`, `ps -L` and `perf` (and `bench ingest`'s CPU by thread)
/// tell the request handlers and the store's writer from the rest.
@Suite struct ThreadNameTests {
    /// What the kernel calls the calling thread.
    static func currentThreadName() -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/thread-self/comm") else { return nil }
        return String(decoding: data.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    @Test func aThreadCarriesItsNameAndALongOneIsCutTo15Bytes() {
        for (given, expected) in [("iapgw-test", "iapgw-test"), ("iapgw-a-much-longer-name", "iapgw-a-much-lo")] {
            let seen = Mutex<String?>(nil)
            let thread = OSThread.start(name: given) { seen.withLock { $0 = Self.currentThreadName() } }
            thread?.join()
            #expect(thread != nil)
            #expect(seen.withLock { $0 } == expected)
        }
    }

    @Test func requestsRunOnThreadsNamedForThem() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 2
        let server = HTTPServer(configuration: configuration) { _ in
            ServerResponse(status: 200, body: Array((Self.currentThreadName() ?? "?").utf8))
        }
        try server.start()
        defer {
            server.stopAccepting()
            server.stop()
        }
        let response = try await CurlTransport().send(
            HTTPRequest(method: .get, url: "http://127.0.0.1:\(server.port)/name")
        )
        #expect(String(decoding: response.body, as: UTF8.self) == "iapgw-handler")
        #expect(ThreadName.handler == "iapgw-handler")
    }
}
