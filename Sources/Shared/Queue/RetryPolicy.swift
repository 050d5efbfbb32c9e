// SPDX-License-Identifier: Apache-2.0

/// Exponential backoff with full jitter: a failed attempt `n` waits a random time in
/// `0 ... min(base · 2^(n−1), cap)` seconds.
public struct RetryPolicy: Sendable, Equatable {
    public var baseSeconds: Double
    public var maxSeconds: Double

    /// - Parameters:
    ///   - baseSeconds: `RETRY_BASE_SECONDS`, the ceiling after the first attempt (default 2).
    ///   - maxSeconds: `RETRY_MAX_SECONDS`, the largest ceiling (default 21600, six hours).
    public init(baseSeconds: Double = 2, maxSeconds: Double = 21_600) {
        self.baseSeconds = baseSeconds
        self.maxSeconds = maxSeconds
    }

    /// The upper bound of the wait after failed attempt `attempt` (1-based).
    public func ceiling(afterAttempt attempt: Int) -> Double {
        let exponent = Double(max(attempt, 1) - 1)
        // 2^exponent overflows to +inf for huge attempts; min() caps it either way.
        return min(baseSeconds * pow2(exponent), maxSeconds)
    }

    /// A jittered wait after failed attempt `attempt`.
    public func delay<G: RandomNumberGenerator>(afterAttempt attempt: Int, using generator: inout G) -> Double {
        let ceiling = ceiling(afterAttempt: attempt)
        guard ceiling > 0 else { return 0 }
        return Double.random(in: 0...ceiling, using: &generator)
    }

    public func delay(afterAttempt attempt: Int) -> Double {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &generator)
    }

    private func pow2(_ exponent: Double) -> Double {
        exponent >= 1024 ? .infinity : Double(sign: .plus, exponent: Int(exponent), significand: 1)
    }
}
