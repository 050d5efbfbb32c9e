// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Why ``withTimeout(_:_:)`` gave up.
public struct TimeoutError: Error, CustomStringConvertible {
    public var description: String { "timed out" }
}

/// Runs `body`, or throws ``TimeoutError`` when it takes longer than `timeout` — even when `body`
/// does not respond to cancellation.
///
/// A query blocked inside PostgreSQL (a lock, a hung server) does not stop when its task is
/// cancelled, and a task group would wait for it; a request must still be answered `503` on time.
/// So `body` runs in its own task, which is cancelled and left to finish (or fail) on its own
/// once the deadline has passed; its result is then dropped.
public func withTimeout<Result: Sendable>(
    _ timeout: Duration, _ body: @Sendable @escaping () async throws -> Result
) async throws -> Result {
    let outcome = FirstOutcome<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.install(continuation)
            let work = Task {
                do { outcome.settle(.success(try await body())) } catch { outcome.settle(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                if outcome.settle(.failure(TimeoutError())) { work.cancel() }
            }
            outcome.onSettle { work.cancel(); timer.cancel() }
        }
    } onCancel: {
        outcome.settle(.failure(CancellationError()))
    }
}

/// Resumes one continuation with whichever result comes first: the work, the timer or cancellation.
private final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var early: Swift.Result<Value, any Error>?
        var settled = false
        var cleanup: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Swift.Result<Value, any Error>? in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    /// Runs `cleanup` once the outcome is settled (at once if it already is).
    func onSettle(_ cleanup: @escaping @Sendable () -> Void) {
        let settled = state.withLock { state -> Bool in
            if !state.settled { state.cleanup = cleanup }
            return state.settled
        }
        if settled { cleanup() }
    }

    /// - Returns: whether this call was the first, and so decided the outcome.
    @discardableResult
    func settle(_ result: Swift.Result<Value, any Error>) -> Bool {
        let (first, continuation, cleanup) = state.withLock { state -> (Bool, CheckedContinuation<Value, any Error>?, (@Sendable () -> Void)?) in
            guard !state.settled else { return (false, nil, nil) }
            state.settled = true
            if state.continuation == nil { state.early = result }
            defer { state.continuation = nil; state.cleanup = nil }
            return (true, state.continuation, state.cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
        return first
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
