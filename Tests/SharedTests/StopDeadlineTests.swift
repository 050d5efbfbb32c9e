// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing
import TestSupport
import UnixSignals

@testable import Shared

/// ``StopDeadline`` with real signals sent to this process (SIGUSR2, which nothing else here
/// traps) and a real `ServiceGroup` that traps the same signal: the group still stops on it, and
/// the deadline reports only a service that outlives it.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct StopDeadlineTests {
    static let signal = UnixSignal.sigusr2

    /// Stops when asked.
    struct Polite: Service, CustomStringConvertible {
        let started: AsyncStream<Void>.Continuation
        var description: String { "polite" }

        func run() async throws {
            started.yield()
            try await gracefulShutdown()
        }
    }

    /// Held shut until opened; waiting on it ignores cancellation.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

        func wait() async {
            await withCheckedContinuation { waiting in
                let isOpen = state.withLock { state in
                    if !state.open { state.waiting = waiting }
                    return state.open
                }
                if isOpen { waiting.resume() }
            }
        }

        func open() {
            let waiting = state.withLock { state in
                state.open = true
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume()
        }
    }

    /// Ignores being asked to stop and being cancelled, as the worker's hung service did, until
    /// its gate opens.
    struct Stubborn: Service, CustomStringConvertible {
        let started: AsyncStream<Void>.Continuation
        let gate: Gate
        var description: String { "stubborn" }

        func run() async throws {
            started.yield()
            await gate.wait()
        }
    }

    /// Runs the group of `services`, sends the signal once `starts` services have started, and
    /// returns the deadline's reports and how long the group took to return.
    static func stop(
        _ services: [any Service], starts: Int, started: AsyncStream<Void>, limit: Duration, whileRunning: @escaping @Sendable ([[String]]) -> Void = { _ in }
    ) async throws -> (reports: [[String]], groupReturnedAfter: Duration) {
        let reports = Mutex<[[String]]>([])
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [signal], logger: TestDatabase.logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(200)
        let deadline = StopDeadline(signals: [signal], limit: limit) { running in
            reports.withLock { $0.append(running) }
            whileRunning(reports.withLock { $0 })
        }
        var signalled = ContinuousClock.now
        try await deadline.watch(configuration) { group in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                // A group that had to cancel a service past its graceful limit throws
                // (`CancellationError`); whether it returns, and when, is what is tested.
                tasks.addTask { try? await group.run() }
                var begun = 0
                for await _ in started {
                    begun += 1
                    if begun == starts { break }
                }
                signalled = .now
                kill(getpid(), signal.rawValue)
                try await tasks.waitForAll()
            }
        }
        let returned = signalled.duration(to: .now)
        return (reports.withLock { $0 }, returned)
    }

    /// A process's deadline (``StopDeadline/run(_:logger:)``) is its group's: the same signals,
    /// the group's graceful limit and the overrun patience after it.
    @Test func aProcesssDeadlineIsItsGroupsGracefulLimitAndThePatience() {
        var configuration = ServiceGroupConfiguration(
            services: [] as [ServiceGroupConfiguration.ServiceConfiguration], gracefulShutdownSignals: [.sigterm, .sigint], logger: TestDatabase.logger)
        configuration.maximumGracefulShutdownDuration = .seconds(45)
        let deadline = StopDeadline.exitingProcess(for: configuration, patience: .seconds(10), logger: TestDatabase.logger)
        #expect(deadline.signals.map(\.rawValue) == [UnixSignal.sigterm, .sigint].map(\.rawValue))
        #expect(deadline.limit == .seconds(55))
    }

    @Test func aGroupThatStopsInTimeIsLeftAlone() async throws {
        let (started, start) = AsyncStream<Void>.makeStream()
        let (reports, returned) = try await Self.stop([Polite(started: start), Polite(started: start)], starts: 2, started: started, limit: .seconds(1))
        // The deadline was cancelled with the body: nothing comes after its limit either.
        try await Task.sleep(for: .seconds(1.5))
        #expect(reports.isEmpty)
        #expect(returned < .seconds(1), "the group stopped on the signal it shares with the deadline")
    }

    @Test func aServiceThatOutlivesTheDeadlineIsNamedWhileTheGroupStillWaits() async throws {
        let (started, start) = AsyncStream<Void>.makeStream()
        let gate = Gate()
        let (reports, returned) = try await Self.stop(
            // The limit leaves the polite service time to return under the full parallel suite on
            // two cores (at 800 ms it once had not, and was named too).
            [Polite(started: start), Stubborn(started: start, gate: gate)], starts: 2, started: started, limit: .seconds(3),
            whileRunning: { _ in gate.open() })
        #expect(reports == [["stubborn"]], "only the service still running, once")
        #expect(returned >= .seconds(3), "the group returned only once the report had released the stubborn service")
    }
}
