internal import ServiceKit

/// App Store Connect read once an hour for the apps the switch may move, as `/admin/status` shows it.
struct AppleSettingsReader: BackgroundService {
    let switcher: AppleSwitcher
    let log: Log
    func run() async { await switcher.readPeriodically(everyMillis: 3_600_000, log: log) }
}
