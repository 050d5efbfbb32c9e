// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// One OCSP check per chain at a time, its answer shared with every request that asked for it
/// meanwhile and remembered (``StateMachine``); this shell runs the check and resumes the waiters.
final class RevocationFlights: Sendable {
    private struct State {
        var machine = StateMachine()
        var nextWaiter = 0
        var waiting: [StateMachine.WaiterID: CheckedContinuation<StateMachine.Answer, Never>] = [:]
        /// Answers that came before their waiter stored its continuation.
        var early: [StateMachine.WaiterID: StateMachine.Answer] = [:]
    }

    private let state = Mutex(State())

    /// The revocation answer for the chain `key`: remembered, or from `check` (run by one caller
    /// at a time per chain), which returns until when a good answer holds.
    ///
    /// - Throws: the check's ``Rejection``; `revocation_unknown` when the caller is cancelled
    ///   while it waits.
    func status(of key: [UInt8], now: Date = Date(), check: () async throws(Rejection) -> Date) async throws(Rejection) {
        let (action, waiter) = state.withLock { state in
            state.nextWaiter += 1
            return (state.machine.begin(key, waiter: state.nextWaiter, now: now), state.nextWaiter)
        }
        let answer: StateMachine.Answer
        switch action {
        case .answer(let remembered):
            answer = remembered
        case .wait:
            answer = await wait(for: key, as: waiter)
        case .check:
            let goodUntil: Date
            do {
                goodUntil = try await check()
                answer = .good
            } catch {
                goodUntil = now
                answer = .failed(error)
            }
            let remember = !Task.isCancelled
            let resumed = state.withLock { state in
                state.machine.finish(key, answer: answer, now: Date(), goodUntil: goodUntil, remember: remember).compactMap { id in
                    if let continuation = state.waiting.removeValue(forKey: id) { return continuation }
                    state.early[id] = answer
                    return nil
                }
            }
            for continuation in resumed { continuation.resume(returning: answer) }
        }
        if case .failed(let rejection) = answer { throw rejection }
    }

    private func wait(for key: [UInt8], as waiter: StateMachine.WaiterID) async -> StateMachine.Answer {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state in
                    guard let answer = state.early.removeValue(forKey: waiter) else {
                        state.waiting[waiter] = continuation
                        return nil as StateMachine.Answer?
                    }
                    return answer
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let cancelled = StateMachine.Answer.failed(Rejection(.revocationUnknown, "the request was cancelled while its chain was being checked"))
            let continuation = state.withLock { state -> CheckedContinuation<StateMachine.Answer, Never>? in
                guard state.machine.cancel(key, waiter: waiter) else { return nil }
                guard let continuation = state.waiting.removeValue(forKey: waiter) else {
                    state.early[waiter] = cancelled
                    return nil
                }
                return continuation
            }
            continuation?.resume(returning: cancelled)
        }
    }
}
