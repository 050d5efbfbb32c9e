// SPDX-License-Identifier: Apache-2.0
import Logging
import ServiceLifecycle
import Shared

/// At start, makes the `FORWARD_TARGETS` endpoints match this process's settings
/// (``EndpointStore/syncEnvironmentTargets(_:secret:)``), retrying while the database is not
/// there yet; then it is done.
struct EnvironmentEndpointsService: Service, CustomStringConvertible {
    let store: EndpointStore
    let targets: [String]
    let secret: String?
    let logger: Logger

    var description: String { "EnvironmentEndpointsService" }

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await store.syncEnvironmentTargets(targets, secret: secret)
                    return
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("FORWARD_TARGETS endpoints not yet updated; retrying", metadata: [
                        "error": "\(ErrorText.describe(error))", "error_type": "\(DatabaseProblem.typeName(of: error))"])
                    try await Task.sleep(for: .seconds(2))
                }
            }
        }
    }
}
