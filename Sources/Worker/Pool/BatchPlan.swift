// SPDX-License-Identifier: Apache-2.0
import Shared

/// How the events one dequeue claimed are split into batches, each applied in one transaction
/// (`WORKER_BATCH_SIZE`), when several batches of a process run at once.
///
/// - The events of one `ordering_key` (an Apple `originalTransactionId`, a Stripe object) stay
///   together, so that two batches of this process do not wait on each other's locks of that
///   entity; a key with more events than a batch holds fills consecutive batches, earliest first.
/// - Batches, and jobs claimed together when each is its own batch, are in the order stored
///   (a dequeue returns its rows in no particular order).
/// - Inside a batch, events are applied in the order they were stored. Not by key: an ordering key
///   is the provider's object, not Sluice's entity (a Stripe refund's charge and its payment
///   intent have different keys and one entitlement), so reordering by key could apply a refund
///   before its purchase.
enum BatchPlan {
    /// The batch size for `claimed` jobs when `freeSlots` transactions may start now: the jobs
    /// spread over the free slots, so that a few events claimed at low load each run in a
    /// transaction of their own, at once and side by side, while a backlog fills whole batches of
    /// `maximum` (`WORKER_BATCH_SIZE`).
    static func size(claimed: Int, freeSlots: Int, maximum: Int) -> Int {
        guard freeSlots > 0 else { return max(1, maximum) }
        let spread = (claimed + freeSlots - 1) / freeSlots
        return max(1, min(maximum, spread))
    }

    static func batches(of jobs: [ClaimedJob], size: Int) -> [[ClaimedJob]] {
        guard size > 1 else { return ordered(jobs).map { [$0] } }
        var groups: [String: [ClaimedJob]] = [:]
        var order: [String] = []
        for job in ordered(jobs) {
            let key = Self.entity(of: job)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(job)
        }
        var batches: [[ClaimedJob]] = []
        var current: [ClaimedJob] = []
        for key in order {
            let group = (groups[key] ?? []).sorted { $0.id < $1.id }
            for start in stride(from: 0, to: group.count, by: size) {
                let chunk = group[start..<min(start + size, group.count)]
                if current.count + chunk.count > size {
                    batches.append(current)
                    current = []
                }
                current.append(contentsOf: chunk)
            }
        }
        if !current.isEmpty { batches.append(current) }
        return batches.map(ordered)
    }

    /// A batch in the order it is applied: the order its events were stored.
    static func ordered(_ batch: [ClaimedJob]) -> [ClaimedJob] {
        batch.sorted { $0.id < $1.id }
    }

    /// The entity an event's locks are about; an event without an ordering key is its own.
    static func entity(of job: ClaimedJob) -> String {
        job.orderingKey.map { "k:" + $0 } ?? "id:\(job.id)"
    }
}
