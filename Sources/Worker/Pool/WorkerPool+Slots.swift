// SPDX-License-Identifier: Apache-2.0

extension WorkerPool {
    /// The pool's slots, decided without I/O (tested as tables in `SlotStateMachineTests`;
    /// ``WorkerPool`` runs what it returns): how many jobs the dispatcher may claim, which claimed
    /// work starts now, which waits, and what a graceful shutdown gives back to the queue.
    ///
    /// Work of one entity runs one unit at a time in this process. Two events of one entity would
    /// wait for each other's entity lock inside PostgreSQL anyway, each holding a slot and a
    /// connection while it waits (measured: 40 % of the slots' time in the mixed benchmark went to
    /// `pg_advisory_xact_lock`). Here the later one waits without a slot, and starts in the task of
    /// the one before it as soon as that one finishes, in the order the two were claimed.
    ///
    /// - `concurrency` units run at once (`WORKER_CONCURRENCY`), each a transaction and a
    ///   connection of its own, and each of up to `unitSize` jobs (`WORKER_BATCH_SIZE`);
    /// - claimed jobs waiting for their entity or a slot are held too, up to as many as the running
    ///   units may hold, so that a process with a few busy entities still claims work for the others;
    /// - every held job, running or waiting, keeps its lease extended (``heldJobIDs``).
    struct SlotStateMachine<Payload>: ~Copyable {
        /// Work that starts and finishes together: one job, or one batch applied in one transaction.
        struct Unit {
            let number: Int
            let jobIDs: [Int64]
            /// The entities whose locks the unit takes (``BatchPlan/entity(of:)``).
            let keys: Set<String>
            let payload: Payload
        }

        let concurrency: Int
        /// The most jobs one unit holds: the batch size.
        let unitSize: Int
        private var nextNumber = 0
        private var running: [Int: Unit] = [:]
        /// Claimed, not started: waiting for an entity a running or earlier unit holds, or for a slot.
        private(set) var waiting: [Unit] = []
        private(set) var isShuttingDown = false

        init(concurrency: Int, unitSize: Int = 1) {
            precondition(concurrency > 0 && unitSize > 0, "a pool runs at least one job")
            self.concurrency = concurrency
            self.unitSize = unitSize
        }

        var runningJobs: Int { running.values.reduce(0) { $0 + $1.jobIDs.count } }
        /// Slots no unit runs in.
        var freeSlots: Int { max(0, concurrency - running.count) }
        var waitingJobs: Int { waiting.reduce(0) { $0 + $1.jobIDs.count } }

        /// Every job this process holds a lease on.
        var heldJobIDs: [Int64] { running.values.flatMap(\.jobIDs) + waiting.flatMap(\.jobIDs) }

        /// How many jobs the dispatcher may claim now: enough to fill the free slots' units, none
        /// while every slot runs or during shutdown.
        var claimLimit: Int {
            guard !isShuttingDown else { return 0 }
            return max(0, min(freeSlots * unitSize, 2 * concurrency * unitSize - runningJobs - waitingJobs))
        }

        /// The dispatcher claimed `work` (in claim order): the units to start now, each in a task
        /// of its own; the others wait.
        mutating func claimed(_ work: [(jobIDs: [Int64], keys: Set<String>, payload: Payload)]) -> [Unit] {
            for item in work {
                waiting.append(Unit(number: nextNumber, jobIDs: item.jobIDs, keys: item.keys, payload: item.payload))
                nextNumber += 1
            }
            return startable()
        }

        /// A unit finished: the units that start now, to run one after another in the finished
        /// unit's task (the first of them is usually the next event of the same entity).
        mutating func finished(_ number: Int) -> [Unit] {
            guard running.removeValue(forKey: number) != nil else {
                preconditionFailure("unit \(number) finished without running")
            }
            return startable()
        }

        /// Graceful shutdown: nothing starts any more; the waiting units go back to the queue.
        mutating func shutDown() -> [Unit] {
            isShuttingDown = true
            defer { waiting = [] }
            return waiting
        }

        /// Moves the waiting units that may start into `running`, in claim order: a unit starts
        /// when a slot is free for its jobs and none of its entities belongs to a running unit or
        /// to an earlier unit that still waits (so one entity's work never overtakes itself).
        private mutating func startable() -> [Unit] {
            guard !isShuttingDown else { return [] }
            var busy = Set(running.values.flatMap(\.keys))
            var slots = concurrency - running.count
            var started: [Unit] = []
            var stillWaiting: [Unit] = []
            for unit in waiting {
                if slots > 0 && busy.isDisjoint(with: unit.keys) {
                    running[unit.number] = unit
                    slots -= 1
                    started.append(unit)
                } else {
                    stillWaiting.append(unit)
                }
                busy.formUnion(unit.keys)
            }
            waiting = stillWaiting
            return started
        }
    }
}

extension WorkerPool.SlotStateMachine.Unit: Sendable where Payload: Sendable {}
