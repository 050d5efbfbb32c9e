// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Worker

/// When a call owed to a provider is tried again: a minute, doubling, at most an hour.
struct ProviderCallRetryTests {
    @Test(arguments: [(0, 60.0), (1, 120), (2, 240), (5, 1_920), (6, 3_600), (7, 3_600), (1_000, 3_600)])
    func theDelayDoublesUpToAnHour(attempts: Int, seconds: Double) {
        #expect(ProviderCallRetry.delay(afterAttempts: attempts) == seconds)
    }
}
