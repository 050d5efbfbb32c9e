// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
import Synchronization

/// The task group in which work given a deadline by ``withTimeout(_:_:)`` runs, so that a caller
/// can give up on work that does not stop when cancelled — a query blocked inside PostgreSQL —
/// without leaving an unstructured task behind.
///
/// A process holds one open around its whole life (``with(logger:_:)`` around its
/// `ServiceGroup`); it is found as a task-local, ``current``. Work whose caller gave up finishes
/// (or fails) in the host's group, and is cancelled as soon as its outcome is decided. When the
/// host's scope ends it waits for such work: by then the `ServiceGroup` has stopped the PostgreSQL
/// clients, whose closed connections fail any query still waiting. While it waits it says (after
/// a second, then every ten) which calls of `withTimeout` are still running, so an operator whose
/// process does not stop sees what holds it.
///
/// Some work never ends: after `pg_ctl restart -m immediate`, a few postgres-nio queries were
/// never answered nor failed, even once their client had shut down and closed every connection,
/// and the worker then never stopped on SIGTERM. So a process gives the host a ``Patience``: the
/// work still running when it runs out is reported and the process exits
/// (``Patience/exitingProcess(after:logger:)``). Nothing is lost by that: work is abandoned only
/// after its deadline, when its caller has already treated it as failed.
public final class OverrunHost: Sendable {
    /// How long a host waits, once its scope has ended, for work that outlived its deadline.
    public struct Patience: Sendable {
        public var limit: Duration
        /// Called once with the work still running (``runningWork``) when `limit` has passed.
        public var exhausted: @Sendable ([String: Int]) -> Void

        public init(limit: Duration, exhausted: @escaping @Sendable ([String: Int]) -> Void) {
            self.limit = limit
            self.exhausted = exhausted
        }

        /// Logs the work still running after `limit`, then exits the process with status 0: the
        /// work was given up on before, and a process asked to stop must stop. Ingest, `worker run`
        /// and the console use the default 10 s (docs/operations.md, Shutdown).
        public static func exitingProcess(after limit: Duration = .seconds(10), logger: Logger) -> Patience {
            Patience(limit: limit) { work in
                logger.warning("exiting with work that never ended", metadata: [
                    "running": "\(work.values.reduce(0, +))", "origins": "\(OverrunHost.describe(work))", "waited": "\(limit)",
                ])
                exit(EXIT_SUCCESS)
            }
        }
    }

    /// The host of the current task, set by ``with(logger:_:)``.
    @TaskLocal public static var current: OverrunHost?

    private typealias Job = @Sendable () async -> Void
    private let jobs: AsyncStream<Job>
    private let submissions: AsyncStream<Job>.Continuation
    /// The work running in the host, counted by where `withTimeout` was called.
    private let running = Mutex<[String: Int]>([:])

    private init() {
        (jobs, submissions) = AsyncStream.makeStream(of: Job.self)
    }

    /// Runs `body` with a host as ``current``; returns once `body` and all the work it handed
    /// over have ended. With a `logger`, the work still running after `body` is reported; with a
    /// `patience`, it is handed to ``Patience/exhausted`` once the limit has passed.
    public static func with<Result: Sendable>(
        logger: Logger? = nil, patience: Patience? = nil, _ body: () async throws -> Result
    ) async throws -> Result {
        let host = OverrunHost()
        return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
            group.addTask { await host.runJobs() }
            defer { host.submissions.finish() }
            let result = try await $current.withValue(host) { try await body() }
            if logger != nil || patience != nil {
                group.addTask { await host.watchUntilIdle(logger: logger, patience: patience) }
            }
            return result
        }
    }

    /// Starts `job` in the host's group, counted under `origin` while it runs.
    /// - Returns: false when the host has ended and so did not take it.
    func submit(origin: String, _ job: @escaping @Sendable () async -> Void) -> Bool {
        running.withLock { $0[origin, default: 0] += 1 }
        let counted: Job = { [self] in
            await job()
            ended(origin)
        }
        if case .enqueued = submissions.yield(counted) { return true }
        ended(origin)
        return false
    }

    private func ended(_ origin: String) {
        running.withLock { counts in
            counts[origin, default: 1] -= 1
            if counts[origin] == 0 { counts[origin] = nil }
        }
    }

    /// The work running now, by origin (`File.swift:line` of the `withTimeout` call).
    public var runningWork: [String: Int] { running.withLock { $0 } }

    /// Runs each job with this host as ``current`` too: a job's own `withTimeout` calls (a
    /// completion written inside an attempt) must be able to give up on their work as well. The
    /// group was made before `body` set ``current``, so its tasks would otherwise have none, and a
    /// deadline inside a job would wait for work that never ends — as a completion statement
    /// after `pg_ctl restart -m immediate` did, which stopped every later delivery.
    private func runJobs() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask { await Self.$current.withValue(self) { await job() } }
            }
        }
    }

    /// Logs what is still running after one second, then every ten, until nothing is, and hands
    /// it to `patience` once its limit has passed. (Work that met its deadline still takes a moment
    /// to end after its caller went on; that is not reported.)
    private func watchUntilIdle(logger: Logger?, patience: Patience?) async {
        let start = ContinuousClock.now
        var checks = 0
        var exhausted = false
        while true {
            let work = runningWork
            if work.isEmpty { return }
            if checks % 100 == 10 {
                logger?.notice("waiting for work that outlived its deadline", metadata: [
                    "running": "\(work.values.reduce(0, +))", "origins": "\(Self.describe(work))",
                ])
            }
            if let patience, !exhausted, start.duration(to: .now) >= patience.limit {
                exhausted = true
                patience.exhausted(work)
            }
            checks += 1
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// `File.swift:line×count, …`, sorted.
    static func describe(_ work: [String: Int]) -> String {
        work.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
    }
}
