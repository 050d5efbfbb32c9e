// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Token buckets by key (``StateMachine``) on the process's monotonic clock.
final class RateLimiter: Sendable {
    private let machine: Mutex<StateMachine>
    private let start = ContinuousClock.now

    init(_ limit: StateMachine.Limit) {
        machine = Mutex(StateMachine(limit: limit))
    }

    func take(_ key: String) -> StateMachine.Decision {
        let elapsed = start.duration(to: .now)
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return machine.withLock { $0.take(key, now: now) }
    }
}
