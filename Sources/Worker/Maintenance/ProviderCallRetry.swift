// SPDX-License-Identifier: Apache-2.0
import Foundation

/// When a call the worker owes a provider (a Google Play acknowledgement, an Apple consumption
/// answer) is tried again after failing: a minute after the first failure, doubling, at most an
/// hour apart, well inside Google's three days and Apple's twelve hours.
enum ProviderCallRetry {
    static let first: TimeInterval = 60
    static let longest: TimeInterval = 3_600

    /// Whether a call that threw counts as a failed try. Not when the worker is stopping: the
    /// call was cut short, neither refused nor left unanswered, so the next pass sends it again
    /// as if this one had not begun (an answer to Apple is a `PUT`; Google refuses a second
    /// acknowledgement, which PlayAcknowledger reads as done).
    static func counts(_ error: any Error) -> Bool { !(error is CancellationError) }

    /// The wait, in seconds, after `attempts` failed tries.
    static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(first * pow(2, Double(min(attempts, 20))), longest)
    }
}
