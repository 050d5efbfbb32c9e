// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

struct RetryPolicyTests {
    @Test func ceilingDoublesPerAttemptAndIsCapped() {
        let policy = RetryPolicy(baseSeconds: 2, maxSeconds: 60)
        #expect((1...7).map { policy.ceiling(afterAttempt: $0) } == [2, 4, 8, 16, 32, 60, 60])
        #expect(policy.ceiling(afterAttempt: 5_000) == 60)
    }

    @Test func fractionalBase() {
        #expect(RetryPolicy(baseSeconds: 0.2, maxSeconds: 1).ceiling(afterAttempt: 3) == 0.8)
    }

    @Test func jitteredDelaysStayUnderTheCeilingAndSpreadOut() {
        let policy = RetryPolicy(baseSeconds: 2, maxSeconds: 100)
        let delays = (0..<500).map { _ in policy.delay(afterAttempt: 4) }
        #expect(delays.allSatisfy { $0 >= 0 && $0 <= 16 })
        // Full jitter: the spread covers most of 0…16, not one fixed value.
        #expect(delays.min()! < 4)
        #expect(delays.max()! > 12)
    }
}
