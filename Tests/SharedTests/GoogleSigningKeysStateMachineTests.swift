// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Shared
import Testing

/// The decisions of ``GoogleSigningKeys/StateMachine`` without I/O, with strings for keys; the
/// shell's twin is `PlayWebhookTests` (a rotated key fetched once, an outage answered 503).
struct GoogleSigningKeysStateMachineTests {
    typealias Machine = GoogleSigningKeys.StateMachine<String>
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func label(_ action: Machine.Action) -> String {
        switch action {
        case .use(let key): "use \(key)"
        case .refuse(let rejection): "refuse \(rejection.reason.code)"
        case .fetch: "fetch"
        case .wait: "wait"
        }
    }

    @Test func theFirstCallerFetchesAndTheOthersWaitForIt() {
        var machine = Machine()
        #expect(label(machine.begin("a", waiter: 1, now: start)) == "fetch")
        #expect(label(machine.begin("a", waiter: 2, now: start)) == "wait")
        #expect(label(machine.begin("b", waiter: 3, now: start)) == "wait")
        #expect(machine.finish(.init(keys: ["a": "key-a"], maxAge: 600), now: start) == [2, 3])
        #expect(label(machine.resolve("a")) == "use key-a")
        #expect(label(machine.resolve("b")) == "refuse unknown_key")
        #expect(label(machine.begin("a", waiter: 4, now: start.addingTimeInterval(599))) == "use key-a")
    }

    @Test func aStaleSetIsFetchedAgain() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.finish(.init(keys: ["a": "key-a"], maxAge: 600), now: start)
        #expect(label(machine.begin("a", waiter: 2, now: start.addingTimeInterval(601))) == "fetch")
    }

    @Test func anUnknownKidFetchesOnceWithinTheRefetchInterval() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.finish(.init(keys: ["a": "key-a"], maxAge: 3_600), now: start)
        let later = start.addingTimeInterval(Machine.refetchInterval + 1)
        #expect(label(machine.begin("new", waiter: 2, now: later)) == "fetch")
        _ = machine.finish(.init(keys: ["a": "key-a"], maxAge: 3_600), now: later)
        // Forged kids cannot make it fetch again at once.
        #expect(label(machine.begin("forged", waiter: 3, now: later.addingTimeInterval(Machine.refetchInterval / 2))) == "refuse unknown_key")
    }

    @Test func aFailedFetchKeepsTheLastGoodSet() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.finish(.init(keys: ["a": "key-a"], maxAge: 60), now: start)
        let stale = start.addingTimeInterval(120)
        #expect(label(machine.begin("a", waiter: 2, now: stale)) == "fetch")
        _ = machine.finish(nil, now: stale)
        #expect(label(machine.resolve("a")) == "use key-a")
        // Not fetched again until the refetch interval passed; the stale set answers meanwhile.
        #expect(label(machine.begin("a", waiter: 3, now: stale.addingTimeInterval(Machine.refetchInterval / 2))) == "use key-a")
        #expect(label(machine.begin("a", waiter: 4, now: stale.addingTimeInterval(Machine.refetchInterval))) == "fetch")
    }

    @Test func withNoSetEverFetchedTheAnswerIsUnavailable() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.finish(nil, now: start)
        #expect(label(machine.resolve("a")) == "refuse keys_unavailable")
        #expect(label(machine.begin("a", waiter: 2, now: start.addingTimeInterval(Machine.refetchInterval / 2))) == "refuse keys_unavailable")
    }

    @Test func freshnessIsClampedAndDefaulted() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.finish(.init(keys: ["a": "key-a"], maxAge: 0), now: start)
        #expect(label(machine.begin("a", waiter: 2, now: start.addingTimeInterval(Machine.minimumFreshness - 1))) == "use key-a")
        var unlabeled = Machine()
        _ = unlabeled.begin("a", waiter: 1, now: start)
        _ = unlabeled.finish(.init(keys: ["a": "key-a"], maxAge: nil), now: start)
        #expect(label(unlabeled.begin("a", waiter: 2, now: start.addingTimeInterval(Machine.defaultFreshness - 1))) == "use key-a")
        #expect(label(unlabeled.begin("a", waiter: 3, now: start.addingTimeInterval(Machine.defaultFreshness + 1))) == "fetch")
    }

    @Test func aCancelledWaiterIsNotWoken() {
        var machine = Machine()
        _ = machine.begin("a", waiter: 1, now: start)
        _ = machine.begin("a", waiter: 2, now: start)
        let first = machine.cancel(2), second = machine.cancel(2)
        #expect(first)
        #expect(!second)
        #expect(machine.finish(.init(keys: [:], maxAge: nil), now: start).isEmpty)
    }

    @Test(arguments: [
        ("public, max-age=19868, must-revalidate, no-transform", 19_868.0), ("max-age=0", 0.0), ("no-cache", nil), ("MAX-AGE = 5", 5.0),
    ] as [(String, Double?)])
    func cacheControlsMaxAge(header: String, expected: Double?) {
        #expect(GoogleSigningKeys.maxAge(header) == expected)
    }
}
