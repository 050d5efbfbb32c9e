// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Resumes one continuation with whichever result comes first: the work, the timer or
/// cancellation; the shell of ``StateMachine``.
final class FirstOutcome<Value: Sendable>: Sendable {
    private typealias Machine = StateMachine<CheckedContinuation<Value, any Error>, CheckedContinuation<Void, Never>, Swift.Result<Value, any Error>>
    private let machine = Mutex(Machine())

    func install(_ continuation: CheckedContinuation<Value, any Error>) {
        switch machine.withLock({ $0.install(continuation) }) {
        case .wait: break
        case .resume(let result): continuation.resume(with: result)
        }
    }

    func settle(_ result: Swift.Result<Value, any Error>) {
        switch machine.withLock({ $0.settle(result) }) {
        case .ignore: break
        case .decide(let waiter, let value, let watchers):
            waiter?.resume(with: value)
            for watcher in watchers { watcher.resume() }
        }
    }

    /// Returns once the outcome is decided.
    func decided() async {
        await withCheckedContinuation { (watcher: CheckedContinuation<Void, Never>) in
            switch machine.withLock({ $0.watch(watcher) }) {
            case .wait: break
            case .resume: watcher.resume()
            }
        }
    }
}
