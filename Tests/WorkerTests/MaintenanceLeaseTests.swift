// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// The leader lease of the worker's sweeps: a pass is stopped while its worker still holds the
/// lease, whatever `CLOCK_SWEEP_INTERVAL_SECONDS` and whatever the service asks, so that two
/// workers never run the same sweep at once (two answers to one consumption request, say).
@Suite(.timeLimit(.minutes(2)))
struct MaintenanceLeaseTests {
    /// Each row: the interval, what the service asks, the limit. The consumption responder asks
    /// 120 s, the Play acknowledger 90 s, the balance announcer 10 s (at its own 1 s interval).
    static let limits: [(interval: Int, requested: Int?, limit: Int)] = [
        (1, nil, 52), (1, 10, 10), (1, 30, 30), (1, 120, 52),
        (5, 120, 60), (10, 90, 70), (14, 90, 78), (15, 90, 80),
        (25, 120, 100), (30, 120, 110), (35, 120, 120), (60, 120, 120),
        (30, nil, 110), (3_600, nil, 7_250), (3_600, 120, 120),
    ]

    @Test(arguments: limits)
    func aPassIsStoppedBeforeItsLeaseRunsOut(row: (interval: Int, requested: Int?, limit: Int)) {
        let interval = Duration.seconds(row.interval)
        let limit = MaintenanceLease.passTimeLimit(interval: interval, requested: row.requested.map { .seconds($0) })
        #expect(limit == .seconds(row.limit))
        #expect(limit + MaintenanceLease.stopMargin <= MaintenanceLease.term(interval: interval, requested: row.requested.map { .seconds($0) }))
    }

    /// Each row: the interval, what the service asks, the lease's term: what a worker killed
    /// holding it leaves undone for at most. Two intervals and a minute, unless the service's
    /// passes are short next to that minute: the balance announcer's 10 s at 1 s, 21 s.
    static let terms: [(interval: Int, requested: Int?, term: Int)] = [
        (1, nil, 62), (1, 10, 21), (1, 30, 41), (1, 90, 62), (1, 120, 62), (5, 120, 70), (30, 120, 120), (60, 120, 180),
        (3_600, nil, 7_260), (3_600, 120, 7_210),
    ]

    @Test(arguments: terms)
    func aLeaseRunsAsLongAsItsPassesNeed(row: (interval: Int, requested: Int?, term: Int)) {
        #expect(MaintenanceLease.term(interval: .seconds(row.interval), requested: row.requested.map { .seconds($0) }) == .seconds(row.term))
    }

    @Test func theAnnouncersLeaseIsShort() {
        #expect(MaintenanceLease.term(interval: BalanceAnnouncer.interval, requested: BalanceAnnouncer.passTimeLimit) == .seconds(21))
    }

    /// Every interval `CLOCK_SWEEP_INTERVAL_SECONDS` allows, with what each service asks.
    @Test func noAllowedIntervalLetsAPassOutliveItsLease() {
        for seconds in 1...3_600 {
            let interval = Duration.seconds(seconds)
            for requested in [nil, 10, 30, 90, 120].map({ $0.map(Duration.seconds) }) {
                let limit = MaintenanceLease.passTimeLimit(interval: interval, requested: requested)
                let term = MaintenanceLease.term(interval: interval, requested: requested)
                #expect(limit > .zero && limit < term, "interval \(seconds) s")
                if let requested { #expect(limit <= requested) }
                // A live holder renews it before it runs out: a whole pass and the wait after it.
                #expect(limit + interval + MaintenanceLease.stopMargin <= term || term == interval * 2 + .seconds(60),
                        "interval \(seconds) s, requested \(String(describing: requested))")
            }
        }
    }

    /// The limit is kept by the lease itself, for every service: a pass that does not end is
    /// stopped at it and recorded so, and the lease's holder runs the next one.
    @Test func aPassThatDoesNotEndIsStoppedAtItsLimit() async throws {
        try await TestDatabase.with { db async throws in
            let lease = MaintenanceLease(client: db.client, task: "stuck", owner: "worker-a", logger: TestDatabase.logger)
            let started = ContinuousClock.now
            await #expect(throws: TimeoutError.self) {
                try await lease.ifHeld(interval: .seconds(1), timeLimit: .milliseconds(300)) {
                    try await Task.sleep(for: .seconds(60))
                }
            }
            #expect(started.duration(to: .now) < .seconds(20))
            #expect(try await db.strings("SELECT leased_by FROM maintenance_leases WHERE task = 'stuck'") == ["worker-a"])
            #expect(try await db.strings("SELECT last_error FROM maintenance_leases WHERE task = 'stuck' AND last_run_at IS NOT NULL")
                        .first?.hasPrefix("the pass ran past its time limit") == true, "the operator sees how the pass ended")
            let other = MaintenanceLease(client: db.client, task: "stuck", owner: "worker-b", logger: TestDatabase.logger)
            #expect(try await other.ifHeld(interval: .seconds(1)) { 1 } == nil, "the lease is still worker-a's")
            #expect(try await lease.ifHeld(interval: .seconds(1)) { 2 } == 2)
        }
    }
}
