// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Synchronization

/// Runs async verification from libFuzzer's synchronous callback: starts a task and blocks the
/// calling thread (libFuzzer's, never one of the concurrency pool's) until it finishes.
public func runBlocking<Result: Sendable>(_ operation: @escaping @Sendable () async -> Result) -> Result {
    let outcome = Outcome<Result>()
    let finished = DispatchSemaphore(value: 0)
    Task {
        let result = await operation()
        outcome.value.withLock { $0 = result }
        finished.signal()
    }
    finished.wait()
    return outcome.value.withLock { $0! }
}

private final class Outcome<Result: Sendable>: Sendable {
    let value = Mutex<Result?>(nil)
}
