// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Shared

/// Every transition of the group-commit writer's decisions, without a database: submissions are
/// numbers, flushers are names.
struct GroupCommitWriterStateMachineTests {
    typealias Machine = GroupCommitWriter.StateMachine<Int, String>

    /// Wraps the noncopyable machine so `#expect` can read it between steps.
    final class Driver {
        var machine = Machine(maximumBatchSize: 3)

        func submit(_ value: Int) -> String {
            switch machine.submit(value) {
            case .refuse: "refuse"
            case .queued: "queued"
            case .handOff(let flusher, let batch): "\(flusher) takes \(batch)"
            }
        }

        func ready(_ flusher: String) -> String {
            switch machine.flusherReady(flusher) {
            case .flush(let batch): "flush \(batch)"
            case .wait: "wait"
            case .exit: "exit"
            }
        }
    }

    @Test func aLoneSubmissionGoesToAnIdleFlusherAtOnce() {
        let driver = Driver()
        #expect(driver.ready("a") == "wait")
        #expect(driver.ready("b") == "wait")
        #expect(driver.submit(1) == "b takes [1]", "the last idle flusher")
        #expect(driver.submit(2) == "a takes [2]")
        #expect(driver.machine.idleFlusherCount == 0)
    }

    @Test func submissionsWhileEveryFlusherIsBusyShareTheNextCommit() {
        let driver = Driver()
        for value in 1...5 { #expect(driver.submit(value) == "queued") }
        #expect(driver.ready("a") == "flush [1, 2, 3]", "at most maximumBatchSize, oldest first")
        #expect(driver.ready("b") == "flush [4, 5]")
        #expect(driver.ready("a") == "wait")
        #expect(driver.machine.pendingCount == 0)
    }

    @Test func shutdownReleasesIdleFlushersAndTheBusyOnesFinishWhatIsPending() {
        let driver = Driver()
        #expect(driver.ready("a") == "wait")
        #expect(driver.submit(1) == "a takes [1]")
        #expect(driver.ready("b") == "wait")
        #expect(driver.submit(2) == "b takes [2]")
        #expect(driver.ready("c") == "wait")
        #expect(driver.submit(3) == "c takes [3]")
        #expect(driver.submit(4) == "queued", "a, b and c are committing")
        #expect(driver.ready("d") == "flush [4]")
        #expect(driver.ready("d") == "wait")
        #expect(driver.machine.beginShutdown() == ["d"], "the idle one is told to end")
        #expect(driver.submit(5) == "refuse", "nothing is taken after shutdown began")
        #expect(driver.ready("a") == "exit")
        #expect(driver.machine.beginShutdown() == [], "twice is harmless")
    }

    @Test func aFlusherBusyAtShutdownStillFlushesWhatWasAcceptedBefore() {
        let driver = Driver()
        #expect(driver.submit(1) == "queued")
        #expect(driver.submit(2) == "queued")
        #expect(driver.machine.beginShutdown() == [])
        #expect(driver.ready("a") == "flush [1, 2]", "accepted before shutdown: still committed")
        #expect(driver.ready("a") == "exit")
    }
}
