// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Worker

/// Every transition of the dispatcher's wake-up, without tasks: waiters are names.
struct WakeupSignalStateMachineTests {
    final class Driver {
        var machine = WakeupSignal.StateMachine<String>()

        func signal() -> String {
            switch machine.signal() {
            case .none: "kept"
            case .resume(let waiter): "resume \(waiter)"
            }
        }

        func wait(_ waiter: String, cancelled: Bool = false) -> String {
            switch machine.wait(waiter, isCancelled: cancelled) {
            case .resumeNow: "now"
            case .suspended: "suspended"
            }
        }
    }

    @Test func aSignalWakesTheWaiter() {
        let driver = Driver()
        #expect(driver.wait("dispatcher") == "suspended")
        #expect(driver.signal() == "resume dispatcher")
        #expect(driver.wait("dispatcher") == "suspended", "one signal wakes one wait")
    }

    @Test func aSignalWithNobodyWaitingIsKeptOnceForTheNextWait() {
        let driver = Driver()
        #expect(driver.signal() == "kept")
        #expect(driver.signal() == "kept", "signals do not pile up")
        #expect(driver.wait("dispatcher") == "now")
        #expect(driver.wait("dispatcher") == "suspended")
    }

    @Test func aTimeoutCancelsTheWaitAndLeavesNoSignal() {
        let driver = Driver()
        #expect(driver.wait("dispatcher") == "suspended")
        #expect(driver.machine.cancel() == "dispatcher")
        #expect(driver.machine.cancel() == nil, "resumed once")
        #expect(driver.signal() == "kept", "a signal after the timeout is kept for the next wait")
        #expect(driver.wait("dispatcher") == "now")
    }

    @Test func aCancelledTaskDoesNotSuspend() {
        let driver = Driver()
        #expect(driver.wait("dispatcher", cancelled: true) == "now")
        #expect(driver.machine.cancel() == nil)
        #expect(driver.signal() == "kept", "the cancelled wait consumed nothing")
    }
}
