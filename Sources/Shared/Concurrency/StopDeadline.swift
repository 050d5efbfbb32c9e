// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
public import ServiceLifecycle
import Synchronization
public import UnixSignals

/// How long a process may take to stop once it was asked to, counted from the signal.
///
/// A `ServiceGroup` asks its services to stop on SIGTERM, cancels them after its
/// `maximumGracefulShutdownDuration`, and then waits for them without limit. After
/// `pg_ctl restart -m immediate` under load a worker's group was seen never to return from that
/// wait (a child still "waiting on child channel" after cancellation), so the process never
/// stopped and needed SIGKILL. ``OverrunHost``'s patience starts only once the group has returned,
/// too late for that.
///
/// ``watch(_:_:)`` observes the same signals beside the group, counts ``limit`` from the first, and
/// calls ``expired`` with the services whose `run()` has not returned. A process runs its group
/// with ``run(_:logger:)``: the limit is the group's graceful limit and the ``OverrunHost``
/// patience after it, and when it passes the services still running are logged and the process
/// exits 0. Nothing is lost by that: a stopping worker takes no new job, and a job left unfinished
/// is taken again by another worker when its lease runs out.
public struct StopDeadline: Sendable {
    /// The signals that ask the process to stop: the group's `gracefulShutdownSignals`.
    public var signals: [UnixSignal]
    /// From the first signal to ``expired``.
    public var limit: Duration
    /// Called once, with the descriptions of the services still running, when ``limit`` has passed.
    public var expired: @Sendable (_ running: [String]) -> Void

    public init(signals: [UnixSignal], limit: Duration, expired: @escaping @Sendable (_ running: [String]) -> Void) {
        self.signals = signals
        self.limit = limit
        self.expired = expired
    }

    /// Runs the group of `configuration` as ingest, `worker run` and the console do: under an
    /// ``OverrunHost`` whose patience (``OverrunHost/Patience/exitingProcess(after:logger:)``, 10 s)
    /// follows the group's return, and under the deadline this makes of the same sum counted from
    /// the first of the group's `gracefulShutdownSignals`: its `maximumGracefulShutdownDuration`
    /// and that patience (docs/operations.md, Shutdown). Past it, the services still running are
    /// logged and the process exits 0.
    public static func run(_ configuration: ServiceGroupConfiguration, logger: Logger) async throws {
        let patience = OverrunHost.Patience.exitingProcess(logger: logger)
        try await exitingProcess(for: configuration, patience: patience.limit, logger: logger).watch(configuration) { group in
            try await OverrunHost.with(logger: logger, patience: patience) { try await group.run() }
        }
    }

    /// The deadline ``run(_:logger:)`` holds: the group's signals, its graceful limit (which a
    /// process must set) and `patience`; it logs the services still running and exits 0.
    static func exitingProcess(for configuration: ServiceGroupConfiguration, patience: Duration, logger: Logger) -> StopDeadline {
        let graceful = configuration.maximumGracefulShutdownDuration
        precondition(graceful != nil, "a process's ServiceGroup needs a maximumGracefulShutdownDuration for its stop deadline")
        let limit = (graceful ?? .zero) + patience
        return StopDeadline(signals: configuration.gracefulShutdownSignals, limit: limit) { running in
            logger.warning("exiting: services did not stop in time", metadata: [
                "running": "\(running.joined(separator: ", "))", "waited": "\(limit)",
            ])
            exit(EXIT_SUCCESS)
        }
    }

    /// Makes the group of `configuration` (each service counted while its `run()` runs), hands it
    /// to `body` to run, and holds the deadline from the first of ``signals`` until `body` returns.
    public func watch(_ configuration: ServiceGroupConfiguration, _ body: (ServiceGroup) async throws -> Void) async throws {
        let running = RunningServices()
        var configuration = configuration
        configuration.services = configuration.services.map { service in
            var counted = service
            counted.service = CountedService(service: service.service, running: running)
            return counted
        }
        let group = ServiceGroup(configuration: configuration)
        // Trapped before the group starts, so the first signal is never missed.
        let stops = await UnixSignalsSequence(trapping: signals)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { [limit, expired] in
                var stopped = stops.makeAsyncIterator()
                // `nil` once `body` has returned and this task is cancelled.
                guard await stopped.next() != nil else { return }
                try await Task.sleep(for: limit)
                expired(running.descriptions)
            }
            defer { tasks.cancelAll() }
            try await body(group)
        }
    }
}

/// The services whose `run()` has begun and not returned, by description.
private final class RunningServices: Sendable {
    private let services = Mutex<[Int: String]>([:])
    private let next = Atomic<Int>(0)

    func begin(_ description: String) -> Int {
        let id = next.add(1, ordering: .relaxed).newValue
        services.withLock { $0[id] = description }
        return id
    }

    func end(_ id: Int) { _ = services.withLock { $0.removeValue(forKey: id) } }

    var descriptions: [String] { services.withLock { $0.sorted { $0.key < $1.key }.map(\.value) } }
}

/// A service that ``RunningServices`` counts while it runs; it says what the service says it is.
private struct CountedService: Service, CustomStringConvertible {
    let service: any Service
    let running: RunningServices

    var description: String { String(describing: service) }

    func run() async throws {
        let id = running.begin(description)
        defer { running.end(id) }
        try await service.run()
    }
}
