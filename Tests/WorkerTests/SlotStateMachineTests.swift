// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Worker

/// Every transition of ``WorkerPool/SlotStateMachine``, without a database: what may be claimed,
/// what starts, what waits for its entity or a slot, what runs next in a finished unit's task, and
/// what a shutdown gives back.
struct SlotStateMachineTests {
    typealias Machine = WorkerPool.SlotStateMachine<String>

    /// One job per unit: `(id, entity)`; the payload is the job's name.
    static func work(_ jobs: [(Int64, String)]) -> [(jobIDs: [Int64], keys: Set<String>, payload: String)] {
        jobs.map { (jobIDs: [$0.0], keys: [$0.1], payload: "job\($0.0)") }
    }

    @Test func jobsOfDifferentEntitiesStartAtOnce() {
        var machine = Machine(concurrency: 4)
        #expect(machine.claimLimit == 4)
        let started = machine.claimed(Self.work([(1, "a"), (2, "b"), (3, "c")]))
        #expect(started.map(\.payload) == ["job1", "job2", "job3"])
        #expect(machine.runningJobs == 3 && machine.waiting.isEmpty)
        #expect(machine.claimLimit == 1)
    }

    @Test func aLaterJobOfARunningEntityWaitsAndRunsNextInItsTask() {
        var machine = Machine(concurrency: 4)
        let started = machine.claimed(Self.work([(1, "a"), (2, "a"), (3, "b"), (4, "a")]))
        #expect(started.map(\.payload) == ["job1", "job3"])
        #expect(machine.waiting.map(\.payload) == ["job2", "job4"])
        // Waiting jobs hold no slot: two more may be claimed for other entities.
        #expect(machine.claimLimit == 2)
        #expect(Set(machine.heldJobIDs) == [1, 2, 3, 4], "waiting jobs keep their leases")
        // b finishing starts nothing of a's.
        #expect(machine.finished(started[1].number).isEmpty)
        let next = machine.finished(started[0].number)
        #expect(next.map(\.payload) == ["job2"])
        #expect(machine.finished(next[0].number).map(\.payload) == ["job4"])
    }

    @Test func claimsAcrossDequeuesKeepOneEntitysOrder() {
        var machine = Machine(concurrency: 2)
        let first = machine.claimed(Self.work([(1, "a")]))
        #expect(machine.claimed(Self.work([(2, "a"), (3, "b")])).map(\.payload) == ["job3"])
        #expect(machine.claimed(Self.work([(4, "a")])).isEmpty)
        #expect(machine.finished(first[0].number).map(\.payload) == ["job2"])
    }

    @Test func aFullPoolHoldsAtMostTwiceItsConcurrency() {
        var machine = Machine(concurrency: 2)
        _ = machine.claimed(Self.work([(1, "a"), (2, "b")]))
        #expect(machine.claimLimit == 0, "every slot runs")
        var other = Machine(concurrency: 2)
        _ = other.claimed(Self.work([(1, "a"), (2, "a"), (3, "a"), (4, "a")]))
        #expect(other.runningJobs == 1 && other.waitingJobs == 3)
        #expect(other.claimLimit == 0, "a slot is free, but 2 × concurrency jobs are held")
    }

    @Test func aJobWaitingForASlotStartsWhenAnyUnitFinishes() {
        var machine = Machine(concurrency: 2)
        let started = machine.claimed(Self.work([(1, "a"), (2, "b"), (3, "c")]))
        #expect(started.map(\.payload) == ["job1", "job2"])
        #expect(machine.waiting.map(\.payload) == ["job3"])
        #expect(machine.finished(started[1].number).map(\.payload) == ["job3"])
    }

    @Test func aWaitingUnitBlocksLaterUnitsOfItsEntitiesEvenWhenASlotIsFree() {
        // job2 (a, b) waits for a; job3 (b) must not overtake it although b is free.
        var machine = Machine(concurrency: 4)
        let started = machine.claimed([
            (jobIDs: [1], keys: ["a"], payload: "job1"),
            (jobIDs: [2], keys: ["a", "b"], payload: "job2"),
            (jobIDs: [3], keys: ["b"], payload: "job3"),
            (jobIDs: [4], keys: ["c"], payload: "job4"),
        ])
        #expect(started.map(\.payload) == ["job1", "job4"])
        #expect(machine.finished(started[0].number).map(\.payload) == ["job2"])
    }

    /// A slot is a transaction: one job or a batch of up to `unitSize`.
    @Test func aBatchTakesOneSlotAndStartsNothingOfItsEntitiesMeanwhile() {
        var machine = Machine(concurrency: 2, unitSize: 3)
        #expect(machine.claimLimit == 6, "enough to fill every slot's batch")
        let started = machine.claimed([
            (jobIDs: [1, 2, 3], keys: ["a", "b"], payload: "batch1"),
            (jobIDs: [4], keys: ["b"], payload: "job4"),
            (jobIDs: [5], keys: ["c"], payload: "job5"),
        ])
        #expect(started.map(\.payload) == ["batch1", "job5"])
        #expect(machine.runningJobs == 4 && machine.claimLimit == 0, "both slots run")
        let next = machine.finished(started[1].number)
        #expect(next.isEmpty, "job4 waits for b")
        #expect(machine.claimLimit == 3, "one free slot's batch (of the 2 × 2 × 3 jobs held at most, 4 are)")
        #expect(machine.finished(started[0].number).map(\.payload) == ["job4"])
    }

    @Test(arguments: [
        // (concurrency, unitSize, jobs running, jobs waiting) → claim limit
        (2, 16, [16, 16], 0, 0),
        (2, 16, [16], 0, 16),
        (2, 16, [1], 0, 16),
        (2, 16, [], 0, 32),
        (2, 16, [16], 40, 0),  // 8 more may be held, but no whole batch
        (2, 16, [16], 48, 0),
        (4, 1, [1, 1], 1, 2),
    ])
    func aPoolClaimsForItsFreeSlotsBatches(concurrency: Int, unitSize: Int, running: [Int], waiting: Int, limit: Int) {
        var machine = Machine(concurrency: concurrency, unitSize: unitSize)
        var next: Int64 = 0
        func ids(_ count: Int) -> [Int64] {
            defer { next += Int64(count) }
            return (0..<count).map { next + Int64($0) }
        }
        let units = running.enumerated().map { (jobIDs: ids($0.element), keys: Set(["r\($0.offset)"]), payload: "run") }
        #expect(machine.claimed(units).count == running.count)
        if waiting > 0 { _ = machine.claimed([(jobIDs: ids(waiting), keys: ["r0"], payload: "wait")]) }
        #expect(machine.claimLimit == limit)
    }

    @Test(arguments: [
        // (running-jobs limit, jobs of the running units) → claim limit; concurrency 16, unit size 16
        (64, [16, 16, 16, 9], 0),  // room for 7: no batch of 7, wait for the next unit to finish
        (64, [16, 16, 9, 9], 0),
        (64, [16, 9, 9], 16),  // room for 23: one whole batch
        (64, [9, 9], 32),
        (64, [1], 48),  // a lone event running at low load does not hold the next ones back
        (64, [], 64),
        (20, [], 20),  // idle: whatever fits, whole or not
        (20, [16], 0),
    ])
    func whileUnitsRunOnlyWholeBatchesAreClaimed(limit: Int, running: [Int], expected: Int) {
        var machine = Machine(concurrency: 16, unitSize: 16, runningJobsLimit: limit)
        var next: Int64 = 0
        let units = running.enumerated().map { offset, count in
            defer { next += Int64(count) }
            return (jobIDs: (0..<count).map { next + Int64($0) }, keys: Set(["r\(offset)"]), payload: "run")
        }
        #expect(machine.claimed(units).count == running.count)
        #expect(machine.claimLimit == expected)
    }

    @Test func shutdownGivesBackTheWaitingAndStartsNothingMore() {
        var machine = Machine(concurrency: 2)
        let started = machine.claimed(Self.work([(1, "a"), (2, "a"), (3, "b"), (4, "c")]))
        #expect(started.map(\.payload) == ["job1", "job3"])
        let returned = machine.shutDown()
        #expect(returned.map(\.payload) == ["job2", "job4"])
        #expect(machine.claimLimit == 0)
        #expect(machine.finished(started[0].number).isEmpty, "a's next job went back to the queue")
        #expect(machine.finished(started[1].number).isEmpty)
        #expect(machine.heldJobIDs.isEmpty)
    }

    @Test(arguments: [
        // (concurrency, entities of the claimed jobs in order, started at once)
        (1, ["a", "b"], ["job0"]),
        (3, ["a", "a", "a"], ["job0"]),
        (3, ["a", "b", "a", "c"], ["job0", "job1", "job3"]),
        (2, ["a", "b", "c", "a"], ["job0", "job1"]),
    ])
    func startsAtOnce(concurrency: Int, entities: [String], started: [String]) {
        var machine = Machine(concurrency: concurrency)
        let jobs = entities.enumerated().map { (Int64($0.offset), $0.element) }
        #expect(machine.claimed(Self.work(jobs)).map(\.payload) == started)
        #expect(machine.runningJobs + machine.waitingJobs == entities.count)
    }

    /// Columns: concurrency, batch size, cores → jobs that may run at once.
    @Test(arguments: [(16, 16, 2, 64), (16, 1, 2, 16), (16, 16, 16, 256), (4, 16, 2, 64), (2, 16, 2, 32), (16, 4, 1, 16)])
    func atMostTwoFullBatchesPerCoreRun(concurrency: Int, batchSize: Int, cores: Int, limit: Int) {
        #expect(WorkerPool.runningJobsLimit(concurrency: concurrency, batchSize: batchSize, cores: cores) == limit)
    }

    /// Lone jobs use every slot; full batches only as many as the running-jobs limit allows, and
    /// a batch bigger than the limit still runs when nothing else does.
    @Test func fullBatchesStopAtTheRunningJobsLimitLoneJobsDoNot() {
        var machine = Machine(concurrency: 4, unitSize: 4, runningJobsLimit: 8)
        #expect(machine.claimLimit == 8 && machine.freeBatchSlots == 2)
        let started = machine.claimed([
            (jobIDs: [1, 2, 3, 4], keys: ["a"], payload: "batch1"),
            (jobIDs: [5, 6, 7, 8], keys: ["b"], payload: "batch2"),
            (jobIDs: [9, 10, 11, 12], keys: ["c"], payload: "batch3"),
        ])
        #expect(started.map(\.payload) == ["batch1", "batch2"], "two full batches reach the limit; two slots stay free")
        #expect(machine.claimLimit == 0 && machine.freeBatchSlots == 0)
        #expect(machine.finished(started[0].number).map(\.payload) == ["batch3"])

        var lone = Machine(concurrency: 4, unitSize: 4, runningJobsLimit: 8)
        #expect(lone.claimed(Self.work([(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")])).count == 4, "lone jobs: every slot")
        #expect(lone.freeBatchSlots == 0 && lone.claimLimit == 0)

        var big = Machine(concurrency: 2, unitSize: 16, runningJobsLimit: 4)
        #expect(big.claimed([(jobIDs: Array(1...16), keys: ["a"], payload: "big")]).map(\.payload) == ["big"], "never stuck")
    }
}
