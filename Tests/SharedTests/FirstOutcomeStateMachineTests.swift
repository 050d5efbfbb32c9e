// SPDX-License-Identifier: Apache-2.0
@testable import Shared
import Testing

/// Every transition of ``FirstOutcome/StateMachine``, without tasks: the caller is `"caller"`, watchers
/// are numbers, outcomes are strings.
struct FirstOutcomeStateMachineTests {
    typealias Machine = FirstOutcome<Int>.StateMachine<String, Int, String>

    @Test func theFirstReportDecidesAndTellsTheWaitingCallerAndEveryWatcher() {
        var machine = Machine()
        #expect(machine.install("caller").isWait)
        #expect(machine.watch(1).isWait)
        #expect(machine.watch(2).isWait)
        guard case .decide(let waiter, let value, let watchers) = machine.settle("work") else {
            Issue.record("the first report did not decide")
            return
        }
        #expect(waiter == "caller")
        #expect(value == "work")
        #expect(watchers == [1, 2])
    }

    @Test(arguments: ["timer", "cancelled"])
    func laterReportsAreDropped(later: String) {
        var machine = Machine()
        _ = machine.install("caller")
        _ = machine.settle("work")
        #expect(machine.settle(later).isIgnore)
    }

    @Test func anOutcomeBeforeTheCallerIsReadyIsKeptForIt() {
        var machine = Machine()
        guard case .decide(let waiter, let value, let watchers) = machine.settle("timer") else {
            Issue.record("the first report did not decide")
            return
        }
        #expect(waiter == nil)
        #expect(value == "timer")
        #expect(watchers.isEmpty)
        guard case .resume(let kept) = machine.install("caller") else {
            Issue.record("the caller was not resumed with the kept outcome")
            return
        }
        #expect(kept == "timer")
        // Kept once: a second report still changes nothing.
        #expect(machine.settle("work").isIgnore)
    }

    @Test func aWatcherAfterTheDecisionIsResumedAtOnceAndNotKept() {
        var machine = Machine()
        _ = machine.install("caller")
        #expect(machine.watch(1).isWait)
        _ = machine.settle("cancelled")
        #expect(machine.watch(2).isResume)
    }

    @Test func watchersAreToldOnce() {
        var machine = Machine()
        _ = machine.watch(7)
        guard case .decide(_, _, let first) = machine.settle("work") else {
            Issue.record("the first report did not decide")
            return
        }
        #expect(first == [7])
        #expect(machine.settle("timer").isIgnore)
    }
}

extension FirstOutcome.StateMachine.InstallAction {
    var isWait: Bool { if case .wait = self { true } else { false } }
}

extension FirstOutcome.StateMachine.SettleAction {
    var isIgnore: Bool { if case .ignore = self { true } else { false } }
}

extension FirstOutcome.StateMachine.WatchAction {
    var isWait: Bool { if case .wait = self { true } else { false } }
    var isResume: Bool { if case .resume = self { true } else { false } }
}
