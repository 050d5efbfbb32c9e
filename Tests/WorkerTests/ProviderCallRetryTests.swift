// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

@testable import Worker

/// When a call owed to a provider is tried again: a minute, doubling, at most an hour; and which
/// failures count as a try.
struct ProviderCallRetryTests {
    @Test(arguments: [(0, 60.0), (1, 120), (2, 240), (5, 1_920), (6, 3_600), (7, 3_600), (1_000, 3_600)])
    func theDelayDoublesUpToAnHour(attempts: Int, seconds: Double) {
        #expect(ProviderCallRetry.delay(afterAttempts: attempts) == seconds)
    }

    /// A refusal or no answer is a failed try; a call cut short by the worker stopping is not
    /// (ConsumptionRequestTests performs that stop).
    @Test func onlyAStopDoesNotCountAsATry() {
        #expect(ProviderCallRetry.counts(ProviderAPIError(provider: "App Store Server", status: 503, message: "unavailable")))
        #expect(ProviderCallRetry.counts(ProviderAPIError(provider: "Google Play", status: nil, message: "no answer")))
        #expect(ProviderCallRetry.counts(URLError(.timedOut)))
        #expect(!ProviderCallRetry.counts(CancellationError()))
    }
}
