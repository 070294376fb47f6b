extension Duration {
    /// The duration in seconds, as a double rounded to the microsecond, so that reports and metrics print
    /// `0.003804`, not the binary noise of `0.0038039710000000005`.
    var seconds: Double {
        let (whole, fraction) = components
        return (Double(whole) * 1e6 + (Double(fraction) / 1e12).rounded()) / 1e6
    }
}
