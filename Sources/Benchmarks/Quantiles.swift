extension Array where Element == Double {
    /// The nearest-rank `p` quantile (`p` in 0…1) of these values, which are sorted ascending, rounded to `decimals`
    /// places: how every bench reports a percentile (0 when nothing was measured).
    func quantile(_ p: Double, decimals: Int) -> Double {
        guard !isEmpty else { return 0 }
        let value = self[Swift.min(count - 1, Int((p * Double(count - 1)).rounded()))]
        let scale = (0..<decimals).reduce(1.0) { s, _ in s * 10 }
        return (value * scale).rounded() / scale
    }
}
