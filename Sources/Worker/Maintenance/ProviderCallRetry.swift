// SPDX-License-Identifier: Apache-2.0
import Foundation

/// When a call the worker owes a provider (a Google Play acknowledgement, an Apple consumption
/// answer) is tried again after failing: a minute after the first failure, doubling, at most an
/// hour apart, well inside Google's three days and Apple's twelve hours.
enum ProviderCallRetry {
    static let first: TimeInterval = 60
    static let longest: TimeInterval = 3_600

    /// The wait, in seconds, after `attempts` failed tries.
    static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(first * pow(2, Double(min(attempts, 20))), longest)
    }
}
