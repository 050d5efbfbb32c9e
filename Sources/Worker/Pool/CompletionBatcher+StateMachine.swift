// SPDX-License-Identifier: Apache-2.0

extension CompletionBatcher {
    /// Who writes the next completion batch, decided without I/O (tested as a table in
    /// `CompletionBatcherStateMachineTests`; ``CompletionBatcher`` runs what it returns).
    ///
    /// The first job to finish while nobody writes leads: it writes its own completion and those
    /// that are waiting, in one statement. Jobs that finish meanwhile wait. When a batch is
    /// written, the first of those that waited leads the next batch, with the rest; so each
    /// leader writes one batch and returns, and no task outlives the jobs that need it.
    struct StateMachine<Waiter> {
        enum ArrivalAction: Equatable {
            /// Nobody writes: the arriving job leads (``takeBatch()``, write, ``batchWritten()``).
            case lead
            /// A batch is being written: the job waits to be resumed, with its result or as the next leader.
            case wait
        }

        private(set) var waiting: [Waiter] = []
        private(set) var isWriting = false

        /// A job finished and wants its completion written.
        mutating func arrive(_ waiter: Waiter) -> ArrivalAction {
            guard isWriting else {
                isWriting = true
                return .lead
            }
            waiting.append(waiter)
            return .wait
        }

        /// The leader takes every waiting job into its batch.
        mutating func takeBatch() -> [Waiter] {
            precondition(isWriting, "only a leader takes a batch")
            defer { waiting = [] }
            return waiting
        }

        /// The leader's batch is written: the waiter that leads next (removed from the waiting),
        /// or `nil` when nobody waits and writing stops.
        mutating func batchWritten() -> Waiter? {
            precondition(isWriting, "only a leader writes a batch")
            guard !waiting.isEmpty else {
                isWriting = false
                return nil
            }
            return waiting.removeFirst()
        }
    }
}
