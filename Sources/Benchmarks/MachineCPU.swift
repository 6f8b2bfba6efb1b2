internal import FoundationEssentials

/// The whole machine's CPU time so far, from the first line of `/proc/stat` (in USER_HZ ticks): how busy every core
/// was between two readings, and how much of it the hypervisor took (steal). A latency measured on a saturated or
/// stolen-from machine says more about the machine than about the gateway; the bench reports both beside it.
struct MachineCPU: Sendable {
    var busy: Double = 0
    var steal: Double = 0
    var total: Double = 0

    /// Now; all zero where `/proc/stat` cannot be read.
    static func now() -> MachineCPU {
        guard let data = try? Data(contentsOf: URL(filePath: "/proc/stat")),
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return MachineCPU() }
        // cpu user nice system idle iowait irq softirq steal [guest guest_nice: already counted in user and nice]
        let v = line.split(separator: " ").dropFirst().prefix(8).map { Double($0) ?? 0 }
        guard v.count == 8 else { return MachineCPU() }
        return MachineCPU(busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7], total: v.reduce(0, +))
    }

    /// The share of all cores' time busy, and stolen, since `earlier`, rounded to 0.01.
    func since(_ earlier: MachineCPU) -> (busy: Double, steal: Double) {
        let total = self.total - earlier.total
        guard total > 0 else { return (0, 0) }
        func share(_ x: Double) -> Double { (x / total * 100).rounded() / 100 }
        return (share(busy - earlier.busy), share(steal - earlier.steal))
    }
}
