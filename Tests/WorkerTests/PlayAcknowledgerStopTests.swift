// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import PostgresNIO
import Shared
import Synchronization
import Testing
import TestSupport

@testable import Worker

/// The worker stopping while Google has not yet answered an acknowledgement, as
/// `ConsumptionRequestTests.aPassCutShortByAStopSpendsNothing` does for Apple.
@Suite(.timeLimit(.minutes(3)))
struct PlayAcknowledgerStopTests {
    /// Three purchases to acknowledge, Google slow to answer: the pass ends with the stop, sends
    /// nothing more, counts no provider error and no attempt, and the next pass acknowledges all three.
    @Test func anAcknowledgementCutShortByAStopSpendsNothing() async throws {
        try await PlayHarness.run { play in
            for n in 1...3 {
                play.api.setSubscription("stop-\(n)", SamplePlayPurchases.subscription(
                    state: "SUBSCRIPTION_STATE_ACTIVE", expiry: Date().addingTimeInterval(30 * 86_400), order: "GPA.stop-\(n)",
                    account: "user-stop-\(n)"))
                try await play.push(SamplePlayNotifications.subscription(4, token: "stop-\(n)"))
            }
            try await play.harness.drain()
            play.api.hangAcknowledgements(for: .seconds(10))
            let errors = Mutex(0)
            let acknowledger = try play.acknowledger(onError: { _ in errors.withLock { $0 += 1 } })
            let api = play.api

            let stopped = try await stopMidPass({ try await acknowledger.runOnce() }, once: { !api.acknowledgementRequests.isEmpty })
            #expect(stopped.took < .seconds(8), "ended with the stop, not with Google's answer")
            if let error = stopped.error { #expect(error is CancellationError, "\(error)") }
            #expect(api.acknowledgementRequests.values.reduce(0, +) == 1, "nothing sent after the stop: \(api.acknowledgementRequests)")
            #expect(errors.withLock { $0 } == 0, "a stop is not a provider error")
            #expect(try await play.harness.db.scalar("""
                SELECT count(*) FROM play_acknowledgements
                WHERE attempts = 0 AND acknowledged_at IS NULL AND last_error IS NULL AND next_attempt_at <= now()
                """) == 3, "all three still due, no attempt spent")

            // The next worker acknowledges all three.
            api.hangAcknowledgements(for: .zero)
            #expect(try await play.acknowledger().runOnce() == 3)
            #expect(api.acknowledgements == ["stop-1": 1, "stop-2": 1, "stop-3": 1])
        }
    }
}
