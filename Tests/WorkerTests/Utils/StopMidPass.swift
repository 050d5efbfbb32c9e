// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

/// How a pass stopped mid-way ended: its outcome (`nil` if it never ended) and how long it ran.
struct StoppedPass<Value: Sendable> {
    var outcome: Result<Value, any Error>?
    var took: Duration

    /// The error it ended with; `nil`, with an issue recorded, when it did not end with one.
    var error: (any Error)? {
        guard case .failure(let error)? = outcome else {
            Issue.record("the pass ended as \(String(describing: outcome))")
            return nil
        }
        return error
    }
}

/// Runs `pass` and cancels it, as a worker stopping does, once `ready` says it has got where the
/// test wants it (an answer on its way to a provider, say). A maintenance pass runs under
/// `withTimeout`: given up on, its work ends in the process's `OverrunHost`, so this waits (up to
/// 8 s) for that work to end before returning, and what it left behind can be looked at.
func stopMidPass<Value: Sendable>(
    _ pass: @escaping @Sendable () async throws -> Value, once ready: @escaping @Sendable () -> Bool
) async throws -> StoppedPass<Value> {
    let started = ContinuousClock.now
    let outcome = await withTaskGroup(of: Result<Value, any Error>?.self) { group in
        group.addTask {
            do { return .success(try await pass()) } catch { return .failure(error) }
        }
        group.addTask {
            while !ready(), !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
            return nil
        }
        var outcome: Result<Value, any Error>?
        while let next = await group.next() {
            if let next { outcome = next } else { group.cancelAll() }
        }
        return outcome
    }
    let took = started.duration(to: .now)
    let host = try #require(OverrunHost.current)
    let deadline = ContinuousClock.now + .seconds(8)
    while !host.runningWork.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    #expect(host.runningWork.isEmpty, "the stopped pass ended: \(host.runningWork)")
    return StoppedPass(outcome: outcome, took: took)
}
