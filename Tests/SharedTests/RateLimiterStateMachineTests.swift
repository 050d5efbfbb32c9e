// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Shared

/// ``RateLimiter/StateMachine``: token buckets by key, on a clock the test sets.
struct RateLimiterStateMachineTests {
    typealias Machine = RateLimiter.StateMachine

    /// The machine behind a reference, so that `#expect` can call its mutating method.
    final class Driver {
        var machine: Machine
        init(perSecond: Double, burst: Double, capacity: Int = 10_000) {
            machine = Machine(limit: .init(perSecond: perSecond, burst: burst), capacity: capacity)
        }
        func take(_ key: String, at now: Double) -> Machine.Decision { machine.take(key, now: now) }
    }

    @Test func aBurstThenTheRateThenRefusedWithTheWait() {
        let limiter = Driver(perSecond: 2, burst: 4)
        for _ in 0..<4 { #expect(limiter.take("k", at: 0) == .allowed) }
        #expect(limiter.take("k", at: 0) == .limited(retryAfterSeconds: 1))
        // Half a second gives one token back at 2/s.
        #expect(limiter.take("k", at: 0.5) == .allowed)
        #expect(limiter.take("k", at: 0.5) == .limited(retryAfterSeconds: 1))
        // Long idle refills to the burst, never beyond.
        for _ in 0..<4 { #expect(limiter.take("k", at: 100) == .allowed) }
        #expect(limiter.take("k", at: 100) == .limited(retryAfterSeconds: 1))
    }

    @Test(arguments: [(0.1, 10), (0.5, 2), (1, 1), (4, 1)])
    func theWaitIsWholeSecondsRoundedUp(perSecond: Double, retryAfter: Int) {
        let limiter = Driver(perSecond: perSecond, burst: 1)
        #expect(limiter.take("k", at: 0) == .allowed)
        #expect(limiter.take("k", at: 0) == .limited(retryAfterSeconds: retryAfter))
    }

    @Test func keysHaveTheirOwnBuckets() {
        let limiter = Driver(perSecond: 1, burst: 1)
        #expect(limiter.take("a", at: 0) == .allowed)
        #expect(limiter.take("a", at: 0) != .allowed)
        #expect(limiter.take("b", at: 0) == .allowed)
    }

    @Test func pastCapacityFullBucketsAreForgottenWithoutChangingAnAnswer() {
        let limiter = Driver(perSecond: 1, burst: 2, capacity: 3)
        // "busy" is empty; the others refill within 2 s.
        #expect(limiter.take("busy", at: 10) == .allowed)
        #expect(limiter.take("busy", at: 10) == .allowed)
        for key in ["a", "b", "c"] { #expect(limiter.take(key, at: 0) == .allowed) }
        #expect(limiter.take("d", at: 10) == .allowed)
        #expect(limiter.machine.keyCount <= 3)
        #expect(limiter.take("busy", at: 10) == .limited(retryAfterSeconds: 1), "the empty bucket is kept")
    }

    @Test func aFloodOfNewKeysKeepsTheNewestHalf() {
        let limiter = Driver(perSecond: 0.001, burst: 1, capacity: 10)
        for index in 0..<11 { #expect(limiter.take("key\(index)", at: Double(index)) == .allowed) }
        #expect(limiter.machine.keyCount == 5)
        #expect(limiter.take("key10", at: 11) != .allowed, "the newest are remembered")
        #expect(limiter.take("key0", at: 11) == .allowed, "the oldest are forgiven")
    }
}
