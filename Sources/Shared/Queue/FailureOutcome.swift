// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// What became of a job after a failed attempt.
public enum FailureOutcome: Sendable, Equatable {
    /// Back to `pending`, to run again at that time.
    case retry(at: Date)
    /// `MAX_ATTEMPTS` reached: parked in the dead-letter state.
    case dead
    /// The lease was no longer ours (it expired and another worker took the job); nothing changed.
    case leaseLost
}
