import Canonical
import FuzzSupport

/// The text durations, sizes and times read from the config, the CLI and the admin API (`DurationText.milliseconds`,
/// `SizeText.bytes`, `TimeText.milliseconds(_:now:)`), and V1's text dates (`AppleDateText.millis`), each on the input
/// as UTF-8 text; a time they accept is formatted back (`TimeText.day`, `TimeText.iso8601`), as reports and logs do.
@main enum TimeFuzzTarget { static func main() { runLibFuzzer(fuzz) } }

/// A fixed wall clock (2025-06-01T00:01:00Z): the real `now` is the wall clock, never an input.
private let now: Int64 = 1_748_736_060_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let ms = DurationText.milliseconds(text) {
        guard ms >= 0 else { FuzzSupport.fail("a negative duration: \(ms)") }
    }
    if let ms = TimeText.milliseconds(text, now: now) {
        _ = TimeText.day(ms)
        _ = TimeText.iso8601(ms)
    }
    if let bytes = SizeText.bytes(text) {
        guard bytes >= 0 else { FuzzSupport.fail("a negative size: \(bytes)") }
    }
    if let ms = AppleDateText.millis(text) {
        _ = UTCTime(milliseconds: ms).iso8601
    }
    return 0
}
