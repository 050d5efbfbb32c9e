// SPDX-License-Identifier: Apache-2.0

extension RateLimiter {
    /// Token buckets by key, decided without I/O or clocks: each key may make ``Limit/burst``
    /// requests at once and ``Limit/perSecond`` on average; a request beyond that is refused with
    /// the seconds until a token is back.
    ///
    /// At most ``capacity`` keys are kept: past it, full buckets (keys idle long enough to have
    /// refilled) are forgotten, which changes no answer; if that is not enough (a flood of new
    /// addresses), the oldest half is, which only forgives them.
    public struct StateMachine: Sendable {
        public struct Limit: Sendable, Equatable {
            public var perSecond: Double
            public var burst: Double

            public init(perSecond: Double, burst: Double) {
                self.perSecond = perSecond
                self.burst = burst
            }
        }

        public enum Decision: Sendable, Equatable {
            case allowed
            /// Refused; a token is back in this many seconds (at least 1, for `Retry-After`).
            case limited(retryAfterSeconds: Int)
        }

        private struct Bucket {
            var tokens: Double
            var updated: Double
        }

        let limit: Limit
        let capacity: Int
        private var buckets: [String: Bucket] = [:]

        init(limit: Limit, capacity: Int = 10_000) {
            self.limit = limit
            self.capacity = capacity
        }

        /// How many keys are remembered (for tests).
        var keyCount: Int { buckets.count }

        /// Takes a token for `key` at `now` (seconds on a monotonic clock).
        mutating func take(_ key: String, now: Double) -> Decision {
            var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: limit.burst, updated: now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                let wait = (1 - bucket.tokens) / limit.perSecond
                return .limited(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            if buckets.count > capacity { forget(now: now) }
            return .allowed
        }

        private func refilled(_ bucket: Bucket, now: Double) -> Bucket {
            let elapsed = max(0, now - bucket.updated)
            return Bucket(tokens: min(limit.burst, bucket.tokens + elapsed * limit.perSecond), updated: now)
        }

        private mutating func forget(now: Double) {
            buckets = buckets.filter { refilled($0.value, now: now).tokens < limit.burst }
            guard buckets.count > capacity else { return }
            let newest = buckets.sorted { $0.value.updated > $1.value.updated }.prefix(capacity / 2)
            buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
        }
    }
}
