import HTTPServer
import Synchronization
import Testing

@testable import ServiceKit

/// The service group stops its phases in order, each only once the one before has ended; a shutdown step does its work
/// at its turn and not before; a listener gives its port at once and ends when stopped.
@Suite struct ServiceGroupTests {
    final class Record: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
        func index(_ line: String) -> Int? { all.firstIndex(of: line) }
    }

    struct Loop: BackgroundService {
        let name: String
        let record: Record
        let stopping = Latch()
        func run() async {
            await stopping.wait()
            record.add("\(name) ended")
        }
        func stop() {
            record.add("\(name) asked")
            stopping.open()
        }
    }

    @Test func phasesStopInOrderEachAfterTheOneBeforeHasEnded() async throws {
        let record = Record()
        let (a, b, c) = (
            Loop(name: "a", record: record), Loop(name: "b", record: record), Loop(name: "c", record: record)
        )
        let group = ServiceGroup(phases: [[a, b], [c]])
        group.start()
        await group.stop()
        let asked = try #require(record.index("c asked"))
        #expect(try #require(record.index("a ended")) < asked)
        #expect(try #require(record.index("b ended")) < asked)
        #expect(record.index("c ended") != nil)
    }

    @Test func aShutdownStepDoesItsWorkAtItsTurnOnly() async throws {
        let record = Record()
        let first = Loop(name: "first", record: record)
        let step = ShutdownStep { record.add("step finished") }
        let group = ServiceGroup(phases: [[first], [step]])
        group.start()
        #expect(record.index("step finished") == nil)
        await group.stop()
        #expect(try #require(record.index("first ended")) < (try #require(record.index("step finished"))))
    }

    @Test func aListenerIsBoundWhenMadeAndEndsWhenStopped() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let listener = try Listener(HTTPServer(configuration: configuration) { _ in ServerResponse(status: 204) }) {
            $0
        }
        #expect(listener.port != 0)
        var taken = configuration
        taken.port = listener.port
        #expect(throws: HTTPServerError.self) {
            _ = try Listener(HTTPServer(configuration: taken) { _ in ServerResponse(status: 204) }) { $0 }
        }
        let group = ServiceGroup(phases: [[listener]])
        group.start()
        await group.stop()
    }
}
