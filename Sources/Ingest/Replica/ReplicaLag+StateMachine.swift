// SPDX-License-Identifier: Apache-2.0
import Foundation

extension ReplicaLag {
    /// Decides whether the read API may read from the replica, from two kinds of observation:
    /// the primary's WAL position at a time, and how far the replica has replayed.
    ///
    /// Every commit acknowledged before a sample `(position, time)` of the primary ends at or
    /// before `position`; once the replica has replayed `position`, it holds every commit made
    /// before `time`. So `now - time` of the newest such sample bounds how stale a replica read
    /// can be, however idle or busy the primary is. Reads go to the replica while that bound is
    /// within `maximumLag`, and to the primary otherwise — also before the first observation and
    /// after the replica fails to answer.
    struct StateMachine: Sendable, Equatable {
        /// Primary samples not yet known to be replayed, oldest first.
        private(set) var pending: [(position: WALPosition, at: Date)] = []
        /// The time of the newest primary sample the replica has replayed.
        private(set) var caughtUpTo: Date?
        /// Samples kept at most (the newest ones), so a stalled replica costs bounded memory.
        let capacity: Int

        init(capacity: Int = 64) {
            self.capacity = capacity
        }

        static func == (a: Self, b: Self) -> Bool {
            a.caughtUpTo == b.caughtUpTo && a.pending.map(\.position) == b.pending.map(\.position) && a.pending.map(\.at) == b.pending.map(\.at)
        }

        mutating func primarySampled(_ position: WALPosition, at time: Date) {
            pending.append((position, time))
            if pending.count > capacity { pending.removeFirst(pending.count - capacity) }
        }

        mutating func replicaReplayed(_ position: WALPosition) {
            while let first = pending.first, first.position <= position {
                caughtUpTo = max(caughtUpTo ?? first.at, first.at)
                pending.removeFirst()
            }
        }

        /// The replica did not answer (or is not a replica): reads go to the primary until it
        /// has replayed a sample taken after this.
        mutating func replicaFailed() {
            caughtUpTo = nil
        }

        /// How stale a read from the replica can be now; `nil` when unknown.
        func lagBound(now: Date) -> TimeInterval? {
            caughtUpTo.map { max(0, now.timeIntervalSince($0)) }
        }

        func readsReplica(now: Date, maximumLag: TimeInterval) -> Bool {
            guard let bound = lagBound(now: now) else { return false }
            return bound <= maximumLag
        }
    }
}
