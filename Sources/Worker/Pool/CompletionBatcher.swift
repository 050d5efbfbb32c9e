// SPDX-License-Identifier: Apache-2.0
import Shared
import Synchronization

/// Completes the jobs of one pool that have no writes of their own (deliveries, recorded-only
/// jobs) in batches: one UPDATE and one commit for every job that finished while the previous
/// batch was being written.
///
/// Batching is natural, without a timer and without a task of its own: a lone completion is
/// written at once by the job that finished; under load, completions that arrive during a write
/// share the next one, written by the first of them (``StateMachine``). A job is reported done
/// only after its batch committed.
final class CompletionBatcher: Sendable {
    /// A waiting job is resumed with its result, or told to lead the next batch.
    enum Resumption: Sendable {
        case written(Bool)
        case lead
    }

    typealias Waiter = (job: ClaimedJob, httpStatus: Int?, continuation: CheckedContinuation<Resumption, any Error>)

    private let queue: JobQueue
    /// How long one completing statement may take before its waiters are failed (their jobs'
    /// leases then expire and they run again); a statement that never returns must not stop
    /// every later completion.
    private let timeLimit: Duration
    private let state = Mutex(StateMachine<Waiter>())

    init(queue: JobQueue, timeLimit: Duration) {
        self.queue = queue
        self.timeLimit = timeLimit
    }

    /// Marks `job` done, together with others that finish meanwhile.
    ///
    /// - Parameter httpStatus: what its remote server answered, kept where the queue records it.
    /// - Returns: whether the job was still leased to its owner and is now done.
    func complete(_ job: ClaimedJob, httpStatus: Int? = nil) async throws -> Bool {
        let resumption: Resumption = try await withCheckedThrowingContinuation { continuation in
            if state.withLock({ $0.arrive((job, httpStatus, continuation)) }) == .lead { continuation.resume(returning: .lead) }
        }
        switch resumption {
        case .written(let done): return done
        case .lead: return try await lead(with: job, httpStatus: httpStatus)
        }
    }

    /// Writes `job`'s completion with every waiting one, resumes them, and hands the lead on.
    private func lead(with job: ClaimedJob, httpStatus: Int?) async throws -> Bool {
        let waiters = state.withLock { $0.takeBatch() }
        let jobs = [job] + waiters.map(\.job)
        var httpStatuses: [Int64: Int] = [:]
        for (id, status) in [(job.id, httpStatus)] + waiters.map({ ($0.job.id, $0.httpStatus) }) { httpStatuses[id] = status }
        var results: [String: Result<Set<Int64>, any Error>] = [:]
        // One statement per owner: `complete` checks each job's lease against it.
        for owner in Set(jobs.map(\.owner)) {
            let ofOwner = jobs.filter { $0.owner == owner }
            do {
                let statuses = httpStatuses
                results[owner] = .success(try await withTimeout(timeLimit) { [queue] in try await queue.complete(ofOwner, httpStatuses: statuses) })
            } catch {
                results[owner] = .failure(error)
            }
        }
        func written(_ job: ClaimedJob) throws -> Bool { try results[job.owner, default: .success([])].get().contains(job.id) }
        for waiter in waiters {
            do {
                waiter.continuation.resume(returning: .written(try written(waiter.job)))
            } catch {
                waiter.continuation.resume(throwing: error)
            }
        }
        if let next = state.withLock({ $0.batchWritten() }) { next.continuation.resume(returning: .lead) }
        return try written(job)
    }
}
