// SPDX-License-Identifier: Apache-2.0

/// The task group in which work given a deadline by ``withTimeout(_:_:)`` runs, so that a caller
/// can give up on work that does not stop when cancelled — a query blocked inside PostgreSQL —
/// without leaving an unstructured task behind.
///
/// A process holds one open around its whole life (``with(_:)`` around its `ServiceGroup`); it is
/// found as a task-local, ``current``. Work whose caller gave up finishes (or fails) in the host's
/// group, and is cancelled as soon as its outcome is decided. When the host's scope ends it waits
/// for such work: by then the `ServiceGroup` has stopped the PostgreSQL clients, whose closed
/// connections fail any query still waiting.
public final class OverrunHost: Sendable {
    /// The host of the current task, set by ``with(_:)``.
    @TaskLocal public static var current: OverrunHost?

    private typealias Job = @Sendable () async -> Void
    private let jobs: AsyncStream<Job>
    private let submissions: AsyncStream<Job>.Continuation

    private init() {
        (jobs, submissions) = AsyncStream.makeStream(of: Job.self)
    }

    /// Runs `body` with a host as ``current``; returns once `body` and all the work it handed
    /// over have ended.
    public static func with<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        let host = OverrunHost()
        return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
            group.addTask { await host.runJobs() }
            defer { host.submissions.finish() }
            return try await $current.withValue(host) { try await body() }
        }
    }

    /// Starts `job` in the host's group.
    /// - Returns: false when the host has ended and so did not take it.
    func submit(_ job: @escaping @Sendable () async -> Void) -> Bool {
        if case .enqueued = submissions.yield(job) { return true }
        return false
    }

    private func runJobs() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs { group.addTask { await job() } }
        }
    }
}
