// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Wakes one waiting task: the pool's dispatcher, when a job finishes, a NOTIFY arrives or shutdown begins.
///
/// A signal sent while nobody waits is kept, so the next ``wait(timeout:)`` returns at once.
final class WakeupSignal: Sendable {
    private let state = Mutex(StateMachine<CheckedContinuation<Void, Never>>())

    func signal() {
        if case .resume(let waiter) = state.withLock({ $0.signal() }) { waiter.resume() }
    }

    /// Returns when signalled, or after `timeout`.
    func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if case .resumeNow = state.withLock({ $0.wait(continuation, isCancelled: Task.isCancelled) }) { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.cancel() }?.resume()
        }
    }
}
