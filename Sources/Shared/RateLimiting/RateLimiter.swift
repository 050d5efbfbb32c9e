// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Token buckets by key (``StateMachine``) on the process's monotonic clock: ingest's API limits
/// and the console's sign-in limit.
public final class RateLimiter: Sendable {
    private let machine: Mutex<StateMachine>
    private let start = ContinuousClock.now

    public init(_ limit: StateMachine.Limit) {
        machine = Mutex(StateMachine(limit: limit))
    }

    public func take(_ key: String) -> StateMachine.Decision {
        let elapsed = start.duration(to: .now)
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return machine.withLock { $0.take(key, now: now) }
    }
}
