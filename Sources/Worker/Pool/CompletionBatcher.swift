// SPDX-License-Identifier: Apache-2.0
import Shared
import Synchronization

/// Completes the jobs of one pool that have no writes of their own (deliveries, recorded-only
/// jobs) in batches: one UPDATE and one commit for every job that finished while the previous
/// batch was committing.
///
/// Batching is natural, without a timer: a lone completion is written at once; under load,
/// completions that arrive during a commit share the next one. A job is reported done only after
/// its batch committed.
final class CompletionBatcher: Sendable {
    private typealias Waiter = (job: ClaimedJob, continuation: CheckedContinuation<Bool, any Error>)

    private struct State {
        var waiting: [Waiter] = []
        var isFlushing = false
    }

    private let queue: JobQueue
    /// How long one completing statement may take before its waiters are failed (their jobs'
    /// leases then expire and they run again); a statement that never returns must not stop
    /// every later completion.
    private let timeLimit: Duration
    private let state = Mutex(State())

    init(queue: JobQueue, timeLimit: Duration) {
        self.queue = queue
        self.timeLimit = timeLimit
    }

    /// Marks `job` done, together with others that finish meanwhile.
    ///
    /// - Returns: whether the job was still leased to its owner and is now done.
    func complete(_ job: ClaimedJob) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            let startsFlushing = state.withLock { state in
                state.waiting.append((job, continuation))
                guard !state.isFlushing else { return false }
                state.isFlushing = true
                return true
            }
            // The flushing task ends as soon as nobody waits; every waiter is resumed by it.
            if startsFlushing { Task { await self.flushUntilEmpty() } }
        }
    }

    private func flushUntilEmpty() async {
        while true {
            let batch = state.withLock { state -> [Waiter] in
                let batch = state.waiting
                state.waiting = []
                if batch.isEmpty { state.isFlushing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            // One statement per owner: `complete` checks each job's lease against it.
            for owner in Set(batch.map(\.job.owner)) {
                let waiters = batch.filter { $0.job.owner == owner }
                do {
                    let jobs = waiters.map(\.job)
                    let done = try await withTimeout(timeLimit) { [queue] in try await queue.complete(jobs) }
                    for waiter in waiters { waiter.continuation.resume(returning: done.contains(waiter.job.id)) }
                } catch {
                    for waiter in waiters { waiter.continuation.resume(throwing: error) }
                }
            }
        }
    }
}
