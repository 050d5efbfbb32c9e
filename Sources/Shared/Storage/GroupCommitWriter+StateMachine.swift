// SPDX-License-Identifier: Apache-2.0

extension GroupCommitWriter {
    /// The decisions of ``GroupCommitWriter`` without its I/O: which submissions a flusher
    /// commits together, when a flusher waits, and what shutdown releases. Generic over the
    /// submission and the waiting flusher, so it is tested with plain values; the writer runs the
    /// actions (resuming continuations, flushing) outside its lock.
    struct StateMachine<Submission, Flusher>: ~Copyable {
        private var pending: [Submission] = []
        private var idleFlushers: [Flusher] = []
        private var isShuttingDown = false
        /// The most submissions one flush takes.
        let maximumBatchSize: Int

        init(maximumBatchSize: Int) {
            precondition(maximumBatchSize > 0)
            self.maximumBatchSize = maximumBatchSize
        }

        enum SubmitAction {
            /// Shutting down: answer the caller with an error, store nothing.
            case refuse
            /// Every flusher is busy: it waits for the next flush.
            case queued
            /// An idle flusher takes this batch (the submission and what waited before it) now.
            case handOff(Flusher, [Submission])
        }

        enum FlusherAction {
            case flush([Submission])
            /// Nothing pending: the flusher waits, kept until a submission or shutdown.
            case wait
            /// Shutting down with nothing pending: the flusher ends.
            case exit
        }

        var pendingCount: Int { pending.count }
        var idleFlusherCount: Int { idleFlushers.count }

        mutating func submit(_ submission: Submission) -> SubmitAction {
            guard !isShuttingDown else { return .refuse }
            pending.append(submission)
            guard let flusher = idleFlushers.popLast() else { return .queued }
            return .handOff(flusher, takeBatch())
        }

        /// A flusher asks for work (at start, and after each flush).
        mutating func flusherReady(_ flusher: Flusher) -> FlusherAction {
            if !pending.isEmpty { return .flush(takeBatch()) }
            if isShuttingDown { return .exit }
            idleFlushers.append(flusher)
            return .wait
        }

        /// Stops taking submissions. Returns the idle flushers, to be told to end: flushers are
        /// idle only while nothing is pending, so what was submitted is still flushed by the busy ones.
        mutating func beginShutdown() -> [Flusher] {
            isShuttingDown = true
            defer { idleFlushers = [] }
            return idleFlushers
        }

        private mutating func takeBatch() -> [Submission] {
            let count = min(maximumBatchSize, pending.count)
            defer { pending.removeFirst(count) }
            return Array(pending.prefix(count))
        }
    }
}
