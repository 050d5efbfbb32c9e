// SPDX-License-Identifier: Apache-2.0

extension WorkerPool {
    /// How many jobs run at once in all of a process's units: every slot for lone jobs, but no more
    /// than two full batches per core. On this 2-core machine 4, 8 and 16 batches of 16 in flight
    /// applied a backlog within 6 % of each other (Benchmarks/README.md), while each batch took
    /// as many times longer: in debug builds, long enough to pass the attempt time limit.
    static func runningJobsLimit(concurrency: Int, batchSize: Int, cores: Int) -> Int {
        max(concurrency, min(concurrency, 2 * max(1, cores)) * batchSize)
    }

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
    /// - at most `runningJobsLimit` jobs run at once, however they are split: when every unit is
    ///   a full batch, a few run (see ``WorkerPool/runningJobsLimit(concurrency:batchSize:cores:)``),
    ///   each sooner, rather than many each slowly;
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
        /// The most jobs running at once, in all units.
        let runningJobsLimit: Int
        private var nextNumber = 0
        private var running: [Int: Unit] = [:]
        /// Claimed, not started: waiting for an entity a running or earlier unit holds, or for a slot.
        private(set) var waiting: [Unit] = []
        private(set) var isShuttingDown = false

        /// - Parameter runningJobsLimit: by default as many as `concurrency` full units hold.
        init(concurrency: Int, unitSize: Int = 1, runningJobsLimit: Int? = nil) {
            precondition(concurrency > 0 && unitSize > 0, "a pool runs at least one job")
            self.concurrency = concurrency
            self.unitSize = unitSize
            self.runningJobsLimit = max(1, runningJobsLimit ?? concurrency * unitSize)
        }

        var runningJobs: Int { running.values.reduce(0) { $0 + $1.jobIDs.count } }
        /// Slots no unit runs in.
        var freeSlots: Int { max(0, concurrency - running.count) }
        /// How many more full units may start now: the free slots, as far as the running-jobs limit allows.
        var freeBatchSlots: Int { min(freeSlots, max(0, runningJobsLimit - runningJobs) / unitSize) }
        var waitingJobs: Int { waiting.reduce(0) { $0 + $1.jobIDs.count } }

        /// Every job this process holds a lease on.
        var heldJobIDs: [Int64] { running.values.flatMap(\.jobIDs) + waiting.flatMap(\.jobIDs) }

        /// How many jobs the dispatcher may claim now: enough to fill the free slots' units within
        /// the running-jobs limit, none while every slot runs or during shutdown.
        ///
        /// While other units run, only whole units are claimed. The room a unit leaves when it
        /// finishes is what the next claim fills: claiming into every bit of room made a batch of 7
        /// leave room for a batch of 7, and a pool under load ran batches of 6.8 jobs on average
        /// instead of 16 (the benchmark's mixed backlog), each paying a batch's ten statements. Now
        /// it waits for the next unit to finish. An idle pool claims whatever is there at once.
        var claimLimit: Int {
            guard !isShuttingDown else { return 0 }
            let startable = min(freeSlots * unitSize, runningJobsLimit - runningJobs)
            let limit = max(0, min(startable, 2 * runningJobsLimit - runningJobs - waitingJobs))
            return running.isEmpty ? limit : limit - limit % unitSize
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
            var jobs = runningJobs
            var started: [Unit] = []
            var stillWaiting: [Unit] = []
            for unit in waiting {
                let fits = jobs + unit.jobIDs.count <= runningJobsLimit || running.isEmpty && started.isEmpty
                if slots > 0 && fits && busy.isDisjoint(with: unit.keys) {
                    running[unit.number] = unit
                    slots -= 1
                    jobs += unit.jobIDs.count
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
