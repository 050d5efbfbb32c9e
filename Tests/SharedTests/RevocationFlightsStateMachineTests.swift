// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import Shared

/// ``RevocationFlights/StateMachine``, without I/O: who checks, who waits, what is remembered and
/// for how long.
struct RevocationFlightsStateMachineTests {
    typealias Machine = RevocationFlights.StateMachine
    static let chain: [UInt8] = [1]
    static let other: [UInt8] = [2]
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let unknown = Rejection(.revocationUnknown, "no answer")
    static let revoked = Rejection(.revoked, "revoked")

    /// The machine behind a reference, so that `#expect` can call its mutating methods.
    final class Driver {
        var machine = Machine()

        func begin(_ key: [UInt8], _ waiter: Int, at seconds: TimeInterval = 0) -> Machine.BeginAction {
            machine.begin(key, waiter: waiter, now: t0 + seconds)
        }

        func finish(_ key: [UInt8], _ answer: Machine.Answer, goodFor: TimeInterval = 600, remember: Bool = true) -> [Int] {
            machine.finish(key, answer: answer, now: t0, goodUntil: t0 + goodFor, remember: remember)
        }

        func cancel(_ key: [UInt8], _ waiter: Int) -> Bool {
            machine.cancel(key, waiter: waiter)
        }
    }

    @Test func theFirstAskerChecksAndTheOthersWaitForItsAnswer() {
        let flights = Driver()
        #expect(flights.begin(Self.chain, 1) == .check)
        #expect(flights.begin(Self.chain, 2) == .wait)
        #expect(flights.begin(Self.chain, 3) == .wait)
        // Another chain is checked on its own.
        #expect(flights.begin(Self.other, 4) == .check)
        #expect(flights.finish(Self.chain, .good) == [2, 3])
        #expect(!flights.machine.isChecking(Self.chain) && flights.machine.isChecking(Self.other))
    }

    @Test(arguments: [
        // answer, asked again after (s), then
        (Machine.Answer.good, 599.0, Machine.BeginAction.answer(.good)),
        (.good, 600, .check),
        (.failed(unknown), 9.9, .answer(.failed(unknown))),
        (.failed(unknown), 10, .check),
        (.failed(revoked), 899, .answer(.failed(revoked))),
        (.failed(revoked), 900, .check),
    ])
    func anAnswerIsRememberedForAsLongAsItHolds(answer: Machine.Answer, after seconds: TimeInterval, then action: Machine.BeginAction) {
        let flights = Driver()
        #expect(flights.begin(Self.chain, 1) == .check)
        #expect(flights.finish(Self.chain, answer) == [])
        #expect(flights.begin(Self.chain, 2, at: seconds) == action)
    }

    @Test func aCheckCutShortIsNotRememberedButItsWaitersAreAnswered() {
        let flights = Driver()
        #expect(flights.begin(Self.chain, 1) == .check)
        #expect(flights.begin(Self.chain, 2) == .wait)
        #expect(flights.finish(Self.chain, .failed(Self.unknown), remember: false) == [2])
        #expect(flights.begin(Self.chain, 3) == .check)
    }

    @Test func aCancelledWaiterIsNotAnsweredByTheCheck() {
        let flights = Driver()
        for waiter in 1...3 { _ = flights.begin(Self.chain, waiter) }
        #expect(flights.cancel(Self.chain, 2))
        #expect(!flights.cancel(Self.chain, 2), "already gone")
        #expect(!flights.cancel(Self.other, 3), "not waiting on that chain")
        #expect(flights.finish(Self.chain, .good) == [3])
        #expect(!flights.cancel(Self.chain, 3), "answered")
    }

    @Test func aFinishWithoutARunningCheckAnswersNobody() {
        let flights = Driver()
        #expect(flights.finish(Self.chain, .good) == [])
        #expect(flights.begin(Self.chain, 1) == .check)
    }

    @Test func overCapacityAnswersAreForgottenButNeverARunningCheck() {
        let flights = Driver()
        #expect(flights.begin(Self.other, 0) == .check)
        let keys = (0..<(Machine.capacity + 10)).map { [9, UInt8($0)] }
        for (index, key) in keys.enumerated() {
            _ = flights.begin(key, index + 1)
            _ = flights.finish(key, .good)
        }
        #expect(flights.machine.isChecking(Self.other))
        let remembered = keys.filter { key in
            let copy = Driver()
            copy.machine = flights.machine
            return copy.begin(key, 1_000) == .answer(.good)
        }
        #expect(remembered.count < Machine.capacity)
        #expect(remembered.contains(keys[keys.count - 1]), "the newest answer is kept")
    }
}
