// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// What happened to one event while the stream ran.
struct SentEvent: Sendable {
    let event: PlannedEvent
    let outcome: RetryingSender.Outcome
    /// Attempts beyond the first, redelivery included.
    let retries: Int
    /// From the first attempt to the `2xx`, retries included.
    let ackMilliseconds: Double
    /// `true` when sent during the unpaced burst.
    let inBurst: Bool
}

/// Sends events from `clients` concurrent clients: first paced at `rate` per second for
/// `pacedSeconds` (a fraction of the capacity, while processes are restarted), then as fast as the
/// clients go for `burstSeconds` (the throughput through the load balancer).
struct TrafficStream: Sendable {
    let planner: EventPlanner
    /// Where each event goes, all at once: the first is the load balancer; more are replicas
    /// that get a copy at the same moment (the same event arriving several times concurrently).
    let destinations: [RetryingSender]
    let clients: Int
    let rate: Double
    let pacedSeconds: Double
    let burstSeconds: Double
    /// How long an event may keep being retried after the stream ends.
    let giveUpSeconds: Double
    /// Stop after this many events, if set.
    var maximumEvents: Int? = nil

    func run() async -> [SentEvent] {
        let next = EventCounter()
        let start = ContinuousClock.now
        let pacedEnd = start + .seconds(pacedSeconds)
        let burstEnd = pacedEnd + .seconds(burstSeconds)
        let giveUp = burstEnd + .seconds(giveUpSeconds)
        return await withTaskGroup(of: [SentEvent].self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var sent: [SentEvent] = []
                    while true {
                        let index = next.take()
                        if let maximumEvents, index >= maximumEvents { break }
                        let scheduled = start + .seconds(Double(index) / rate)
                        let inBurst = scheduled >= pacedEnd
                        if !inBurst {
                            try? await Task.sleep(until: scheduled)
                        } else if ContinuousClock.now >= burstEnd {
                            break
                        }
                        guard let event = try? planner.event(index) else { continue }
                        sent.append(await send(event, inBurst: inBurst, until: giveUp))
                    }
                    return sent
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
    }

    private func send(_ event: PlannedEvent, inBurst: Bool, until giveUp: ContinuousClock.Instant) async -> SentEvent {
        let began = ContinuousClock.now
        var (outcome, retries) = await deliverEverywhere(event, until: giveUp)
        let elapsed = began.duration(to: .now)
        if outcome == .acknowledged && event.redeliver {
            let again = await destinations[0].deliver(event, until: giveUp)
            outcome = again.0
            retries += again.retries
        }
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        return SentEvent(event: event, outcome: outcome, retries: retries, ackMilliseconds: milliseconds, inBurst: inBurst)
    }

    /// Acknowledged only when every destination acknowledged its copy.
    private func deliverEverywhere(_ event: PlannedEvent, until giveUp: ContinuousClock.Instant) async -> (RetryingSender.Outcome, retries: Int) {
        guard destinations.count > 1 else { return await destinations[0].deliver(event, until: giveUp) }
        return await withTaskGroup(of: (RetryingSender.Outcome, retries: Int).self) { group in
            for destination in destinations {
                group.addTask { await destination.deliver(event, until: giveUp) }
            }
            return await group.reduce((.acknowledged, 0)) { worst, copy in
                (worst.0 == .acknowledged ? copy.0 : worst.0, worst.1 + copy.1)
            }
        }
    }
}

/// Hands out event indexes to the senders, each once.
private final class EventCounter: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int { next.add(1, ordering: .relaxed).oldValue }
}
