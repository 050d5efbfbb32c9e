// SPDX-License-Identifier: Apache-2.0

extension FirstOutcome {
    /// The pure decisions of ``withTimeout(_:_:)``: of the work, its timer and the caller's
    /// cancellation, the first to report decides the outcome; who is told what, and when.
    ///
    /// `Outcome` is what the caller is resumed with, `Waiter` the caller's continuation, `Watcher`
    /// a continuation of the host's task that cancels the work once the outcome is known (generic,
    /// so the tests use plain values).
    struct StateMachine<Waiter, Watcher, Outcome>: ~Copyable {
        private var waiter: Waiter?
        /// An outcome that came before the caller's continuation was installed.
        private var early: Outcome?
        private var settled = false
        private var watchers: [Watcher] = []

        init() {}

        enum InstallAction {
            /// Nothing yet: the caller waits.
            case wait
            /// The outcome is already known: resume the caller with it at once.
            case resume(Outcome)
        }

        /// The caller's continuation is ready.
        mutating func install(_ waiter: Waiter) -> InstallAction {
            if let early {
                self.early = nil
                return .resume(early)
            }
            self.waiter = waiter
            return .wait
        }

        enum SettleAction {
            /// Someone else decided first; this report is dropped.
            case ignore
            /// This report decides. Resume `waiter` (when installed) with the value, and every
            /// watcher.
            case decide(waiter: Waiter?, value: Outcome, watchers: [Watcher])
        }

        /// The work, the timer or the caller's cancellation reports `value`.
        mutating func settle(_ value: Outcome) -> SettleAction {
            guard !settled else { return .ignore }
            settled = true
            let waiter = self.waiter
            self.waiter = nil
            if waiter == nil { early = value }
            defer { watchers = [] }
            return .decide(waiter: waiter, value: value, watchers: watchers)
        }

        enum WatchAction {
            /// Not decided yet: the watcher is resumed when it is.
            case wait
            /// Already decided: resume the watcher at once.
            case resume
        }

        /// The host's task wants to know when the outcome is decided.
        mutating func watch(_ watcher: Watcher) -> WatchAction {
            if settled { return .resume }
            watchers.append(watcher)
            return .wait
        }
    }
}
