// SPDX-License-Identifier: Apache-2.0
import Foundation

extension GoogleSigningKeys {
    /// What to do for a token's `kid`, decided without I/O: answer with a kept key, fetch Google's
    /// set (one caller at a time), or wait for the fetch already running.
    ///
    /// - A fetched set is fresh for its `Cache-Control: max-age` (clamped to ``minimumFreshness`` …
    ///   ``maximumFreshness``); a stale set is fetched again by the next token that needs it.
    /// - A `kid` the fresh set lacks (Google rotated a key in) fetches once, unless a fetch ended
    ///   within ``refetchInterval``: forged `kid`s make Sluice fetch at most once a second.
    /// - A failed fetch keeps the last good set, which still answers (Google's keys overlap by
    ///   days), and is not retried for ``refetchInterval``.
    struct StateMachine<Key: Sendable>: Sendable {
        typealias WaiterID = Int

        enum Action: Sendable {
            case use(Key)
            case refuse(Rejection)
            /// The caller fetches, then calls ``finish(_:now:)``.
            case fetch
            /// A fetch is running; the caller waits, then asks ``resolve(_:)``.
            case wait
        }

        /// The set as fetched, and how long it is fresh (`nil`: no `max-age`).
        struct Fetched: Sendable {
            var keys: [String: Key]
            var maxAge: TimeInterval?
        }

        static var minimumFreshness: TimeInterval { 60 }
        static var maximumFreshness: TimeInterval { 24 * 3_600 }
        /// The freshness of a set served without `max-age`.
        static var defaultFreshness: TimeInterval { 3_600 }
        static var refetchInterval: TimeInterval { 1 }

        private(set) var keys: [String: Key]?
        private var freshUntil = Date.distantPast
        private var lastFetchEnded = Date.distantPast
        private var fetching = false
        private var waiters: [WaiterID] = []

        /// The decision for `kid` at `now`; `.wait` registers `waiter`.
        mutating func begin(_ kid: String, waiter: WaiterID, now: Date) -> Action {
            if let key = keys?[kid], now < freshUntil { return .use(key) }
            if fetching {
                waiters.append(waiter)
                return .wait
            }
            let mayFetch = now.timeIntervalSince(lastFetchEnded) >= Self.refetchInterval
            if mayFetch {
                fetching = true
                return .fetch
            }
            return resolve(kid)
        }

        /// Ends the running fetch: `fetched` replaces the set, `nil` (it failed) keeps the last good
        /// one. Returns the waiters to wake.
        mutating func finish(_ fetched: Fetched?, now: Date) -> [WaiterID] {
            if let fetched {
                keys = fetched.keys
                let freshness = min(max(fetched.maxAge ?? Self.defaultFreshness, Self.minimumFreshness), Self.maximumFreshness)
                freshUntil = now.addingTimeInterval(freshness)
            }
            lastFetchEnded = now
            fetching = false
            defer { waiters = [] }
            return waiters
        }

        /// Forgets a waiter that was cancelled; `false` when it was already woken.
        mutating func cancel(_ waiter: WaiterID) -> Bool {
            guard let index = waiters.firstIndex(of: waiter) else { return false }
            waiters.remove(at: index)
            return true
        }

        /// The answer from the set kept, whatever its age: the key, or why there is none.
        func resolve(_ kid: String) -> Action {
            guard let keys else {
                return .refuse(Rejection(.keysUnavailable, "Google's signing keys could not be fetched"))
            }
            guard let key = keys[kid] else {
                return .refuse(Rejection(.unknownKey, "the token's kid is not one of Google's signing keys"))
            }
            return .use(key)
        }
    }
}
