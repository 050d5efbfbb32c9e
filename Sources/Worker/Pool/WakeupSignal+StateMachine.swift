// SPDX-License-Identifier: Apache-2.0

extension WakeupSignal {
    /// The decisions of ``WakeupSignal``, without the continuations' I/O: a signal wakes the one
    /// waiter or, with nobody waiting, is kept for the next wait; a cancelled wait gives its
    /// waiter back to be resumed. Generic over the waiter so it is tested with plain values.
    struct StateMachine<Waiter>: ~Copyable {
        private enum State {
            case idle
            /// A signal arrived while nobody waited.
            case signalled
            case waiting(Waiter)
        }

        private var state = State.idle

        enum SignalAction {
            case none
            case resume(Waiter)
        }

        enum WaitAction {
            /// A kept signal (or a cancelled task): resume the waiter at once.
            case resumeNow
            /// Suspended: the next signal or the cancellation resumes it.
            case suspended
        }

        mutating func signal() -> SignalAction {
            switch state {
            case .idle, .signalled:
                state = .signalled
                return .none
            case .waiting(let waiter):
                state = .idle
                return .resume(waiter)
            }
        }

        /// - Precondition: nobody else waits (the pool has one dispatcher).
        mutating func wait(_ waiter: Waiter, isCancelled: Bool) -> WaitAction {
            switch state {
            case .signalled:
                state = .idle
                return .resumeNow
            case .idle:
                if isCancelled { return .resumeNow }
                state = .waiting(waiter)
                return .suspended
            case .waiting:
                preconditionFailure("WakeupSignal has one waiter at a time")
            }
        }

        /// The wait was cancelled (its timeout passed): the waiter to resume, if it still waits.
        mutating func cancel() -> Waiter? {
            guard case .waiting(let waiter) = state else { return nil }
            state = .idle
            return waiter
        }
    }
}
