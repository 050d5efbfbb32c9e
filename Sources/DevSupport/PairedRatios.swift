// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The ratios of alternated benchmark pairs (each run against the baseline run just before it),
/// summed up as their mean and a 95 % confidence interval (Student's t over the pairs), so that a
/// target such as "≥ 0.9×" is read against the run-to-run noise of a shared machine instead of
/// against one mean.
public struct PairedRatios: Equatable, Sendable {
    public var ratios: [Double]

    public init(_ ratios: [Double]) { self.ratios = ratios }

    public var mean: Double { ratios.reduce(0, +) / Double(ratios.count) }

    /// The sample standard deviation; `nil` below two pairs.
    public var standardDeviation: Double? {
        guard ratios.count > 1 else { return nil }
        let mean = mean
        return (ratios.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(ratios.count - 1)).squareRoot()
    }

    /// The 95 % confidence interval of the mean; `nil` below two pairs.
    public var interval95: ClosedRange<Double>? {
        guard let deviation = standardDeviation else { return nil }
        let half = Self.t975(degreesOfFreedom: ratios.count - 1) * deviation / Double(ratios.count).squareRoot()
        return (mean - half)...(mean + half)
    }

    /// Student's t at 0.975 (two-sided 95 %), from the standard tables; the normal 1.96 beyond 30
    /// degrees of freedom (2.04 at 30: under 4 % wider).
    public static func t975(degreesOfFreedom df: Int) -> Double {
        let table: [Double] = [
            12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
            2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
        ]
        return df >= 1 && df <= table.count ? table[df - 1] : 1.96
    }

    /// `mean 0.902 (95 % 0.871–0.933, 6 pairs)`, or the mean alone below two pairs.
    public var summary: String {
        guard let interval = interval95 else { return String(format: "mean %.3f (%d pair)", mean, ratios.count) }
        return String(format: "mean %.3f (95 %% %.3f–%.3f, %d pairs)", mean, interval.lowerBound, interval.upperBound, ratios.count)
    }
}
