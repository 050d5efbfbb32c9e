// SPDX-License-Identifier: Apache-2.0

/// Why ``withTimeout(_:_:)`` gave up.
public struct TimeoutError: Error, CustomStringConvertible {
    public var description: String { "timed out" }
}

/// Runs `body`, or throws ``TimeoutError`` when it takes longer than `timeout` — even when `body`
/// does not respond to cancellation.
///
/// A query blocked inside PostgreSQL (a lock, a hung server) does not stop when its task is
/// cancelled, and a task group would wait for it; a request must still be answered `503` on time.
/// So `body` runs in the ``OverrunHost/current`` host's group: the call returns at the deadline
/// (or at once when its own task is cancelled), and `body` is cancelled and left to end there; its
/// result is then dropped. While it runs there, the host counts it under its call site (`file`,
/// `line`), which a process stopping with work left names in its log. Without a host this is
/// ``withCancellingTimeout(_:_:)``, which waits for `body` to end.
public func withTimeout<Result: Sendable>(
    _ timeout: Duration, file: StaticString = #fileID, line: UInt = #line, _ body: @Sendable @escaping () async throws -> Result
) async throws -> Result {
    guard let host = OverrunHost.current else { return try await withCancellingTimeout(timeout, body) }
    let outcome = FirstOutcome<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.install(continuation)
            let taken = host.submit(origin: "\(file):\(line)") {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do { outcome.settle(.success(try await body())) } catch { outcome.settle(.failure(error)) }
                    }
                    group.addTask {
                        try? await Task.sleep(for: timeout)
                        outcome.settle(.failure(TimeoutError()))
                    }
                    await outcome.decided()
                    group.cancelAll()
                }
            }
            if !taken { outcome.settle(.failure(CancellationError())) }
        }
    } onCancel: {
        outcome.settle(.failure(CancellationError()))
    }
}

/// Runs `body` in a child task and cancels it after `timeout`, throwing ``TimeoutError``; for work
/// that stops when cancelled.
///
/// Unlike ``withTimeout(_:_:)`` nothing outlives the call: a request body must not, because
/// Hummingbird reads the next request of the connection with the same iterator once the handler
/// has returned, and two readers of one iterator crash the process.
public func withCancellingTimeout<Result: Sendable>(
    _ timeout: Duration, _ body: @Sendable @escaping () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else { throw TimeoutError() }
        return result
    }
}
