// SPDX-License-Identifier: Apache-2.0

extension DatabaseReachability {
    /// The pure decisions of ``DatabaseReachability``: from each probe's result, whether to say
    /// anything. The first probe is always told (reached or not); after it, only a change is, so an
    /// outage is one line when it starts and one when it ends, however long it lasts.
    struct StateMachine: Sendable {
        enum Known: Equatable, Sendable {
            case notProbed
            case reachable
            /// Unreachable since `since` (seconds on the caller's clock).
            case unreachable(since: Double)
        }

        private(set) var known = Known.notProbed

        enum Announcement: Equatable, Sendable {
            /// The first probe answered.
            case reached
            /// The first probe failed.
            case unreachable
            /// It answered before; now it does not.
            case lost
            /// It did not answer for `after` seconds; now it does.
            case back(after: Double)
        }

        /// A probe answered (`reachable`) or failed, at `now`; what to announce, if anything.
        mutating func probed(reachable: Bool, at now: Double) -> Announcement? {
            switch (known, reachable) {
            case (.notProbed, true):
                known = .reachable
                return .reached
            case (.notProbed, false):
                known = .unreachable(since: now)
                return .unreachable
            case (.reachable, true), (.unreachable, false):
                return nil
            case (.reachable, false):
                known = .unreachable(since: now)
                return .lost
            case (.unreachable(let since), true):
                known = .reachable
                return .back(after: now - since)
            }
        }
    }
}
