// SPDX-License-Identifier: Apache-2.0
import Logging
import ServiceLifecycle

/// The loop of every periodic maintenance service: `pass` now, then every `interval`, until
/// graceful shutdown. A failed pass is logged (`failure`, with its error) and the next one runs.
func runPeriodically(every interval: Duration, failure: String, logger: Logger, _ pass: @escaping @Sendable () async throws -> Void) async {
    try? await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            do {
                try await pass()
            } catch is CancellationError {
                return
            } catch {
                logger.error("\(failure)", metadata: ["error": "\(ErrorText.describe(error))"])
            }
            try await Task.sleep(for: interval)
        }
    }
}
