// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// When the next delivery to a rate-limited endpoint may leave: a pure schedule (GCRA without
/// burst), tested as a table (`SendScheduleTests`).
///
/// Each reservation takes the next free slot, `1 / maxPerSecond` after the previous one, or now
/// if that is later; the caller waits until its slot.
struct SendSchedule: Sendable, Equatable {
    /// The earliest time the next delivery may leave, in seconds on the caller's clock.
    private(set) var nextFree: Double?

    /// - Returns: how long to wait before sending, in seconds (0 to send at once).
    mutating func reserve(now: Double, maxPerSecond: Int) -> Double {
        let interval = 1 / Double(max(maxPerSecond, 1))
        let slot = max(now, nextFree ?? now)
        nextFree = slot + interval
        return slot - now
    }
}

/// This process's schedules, one per rate-limited endpoint (`--max-per-second` holds per worker process).
final class EndpointRateLimiter: Sendable {
    private let schedules = Mutex<[Int64: SendSchedule]>([:])
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant

    init() {
        start = clock.now
    }

    /// Waits for the endpoint's next slot.
    func waitForSlot(endpoint id: Int64, maxPerSecond: Int) async throws {
        let now = start.duration(to: clock.now) / .seconds(1)
        let delay = schedules.withLock { $0[id, default: SendSchedule()].reserve(now: now, maxPerSecond: maxPerSecond) }
        if delay > 0 { try await Task.sleep(for: .seconds(delay)) }
    }
}
