// SPDX-License-Identifier: Apache-2.0
import Logging
import Shared

/// What applying one stored event did, as ``StateWriter`` saved it: logged once it committed.
struct AppliedEvent: Sendable, Equatable {
    var outcome: EventOutcome
    var entityKey: String?
    /// Why it was recorded only or stale.
    var detail: String?
    /// How many deliveries its announcements (and a raw notification's forwards) made.
    var deliveries = 0
    /// The entitlement and transaction events it announced, in order.
    var announced: [OutgoingEventType] = []

    /// One `info` line per event, after its transaction committed: what it was, what became of
    /// it and why — what a developer watching `scripts/dev` wants to see for each event sent.
    func log(_ job: ClaimedJob, to logger: Logger) {
        var metadata: Logger.Metadata = [
            "event_id": "\(job.id)", "source": "\(job.kind)", "outcome": "\(outcome.rawValue)",
        ]
        if let type = job.eventType { metadata["type"] = "\(type)" }
        if let entityKey { metadata["entity"] = "\(entityKey)" }
        if let detail { metadata["why"] = "\(detail)" }
        if !announced.isEmpty { metadata["announced"] = "\(announced.map(\.rawValue).joined(separator: ","))" }
        logger.info("event \(outcome.rawValue)", metadata: metadata)
    }
}
