// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Worker

/// Every transition of ``CompletionBatcher/StateMachine``, without a database: who leads, who
/// waits, what a batch holds and who leads next.
struct CompletionBatcherStateMachineTests {
    typealias Machine = CompletionBatcher.StateMachine<Int>

    @Test func aLoneCompletionLeadsAndWritingStopsAfterIt() {
        var machine = Machine()
        #expect(machine.arrive(1) == .lead)
        #expect(machine.takeBatch() == [])
        #expect(machine.batchWritten() == nil)
        #expect(!machine.isWriting)
        #expect(machine.arrive(2) == .lead, "the next lone completion leads again")
    }

    @Test func completionsDuringAWriteWaitAndTheFirstOfThemLeadsTheNextBatch() {
        var machine = Machine()
        #expect(machine.arrive(1) == .lead)
        #expect(machine.takeBatch() == [])
        #expect(machine.arrive(2) == .wait)
        #expect(machine.arrive(3) == .wait)
        #expect(machine.arrive(4) == .wait)
        // 1's batch is written: 2 leads the next, which takes 3 and 4.
        #expect(machine.batchWritten() == 2)
        #expect(machine.isWriting)
        #expect(machine.takeBatch() == [3, 4])
        #expect(machine.arrive(5) == .wait)
        #expect(machine.batchWritten() == 5)
        #expect(machine.takeBatch() == [])
        #expect(machine.batchWritten() == nil)
        #expect(!machine.isWriting && machine.waiting.isEmpty)
    }

    @Test(arguments: [
        // (arrivals while a batch is written, waiting after the leader took its batch)
        ([Int](), [Int]()), ([7], [7]), ([7, 8, 9], [7, 8, 9]),
    ])
    func aLeaderTakesEveryoneWaiting(arrivals: [Int], taken: [Int]) {
        var machine = Machine()
        #expect(machine.arrive(0) == .lead)
        for arrival in arrivals { #expect(machine.arrive(arrival) == .wait) }
        #expect(machine.takeBatch() == taken)
        #expect(machine.waiting.isEmpty)
    }
}
