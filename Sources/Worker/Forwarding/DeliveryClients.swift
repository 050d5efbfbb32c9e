// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient

/// The HTTP clients deliveries go out on: one that reaches any address, for the endpoints an
/// operator added with `--allow-private` and those `FORWARD_TARGETS` makes (configuration), and
/// one that refuses, on every new connection, an address ``PrivateAddress`` names — checked on the
/// address the name resolved to, so a name that resolves elsewhere next time is checked again.
struct DeliveryClients: Sendable {
    let anyAddress: HTTPClient
    let publicOnly: HTTPClient

    /// The client for a delivery to `endpoint` (`nil`: a forward made before endpoints existed,
    /// to a `FORWARD_TARGETS` URL).
    func client(for endpoint: Endpoint?) -> HTTPClient {
        guard let endpoint, !endpoint.allowPrivate, endpoint.managedBy != Endpoint.managedByEnvironment else { return anyAddress }
        return publicOnly
    }

    /// Both clients, configured as `worker run` configures its HTTP client, for `body`'s duration.
    static func with<Result: Sendable>(
        _ configuration: HTTPClient.Configuration, _ body: (DeliveryClients) async throws -> Result
    ) async throws -> Result {
        var publicConfiguration = configuration
        publicConfiguration.http1_1ConnectionDebugInitializer = PrivateAddress.refuseConnection
        publicConfiguration.http2ConnectionDebugInitializer = PrivateAddress.refuseConnection
        // A refused connection is not tried again within the attempt: the delivery's own retries
        // (with backoff, until MAX_ATTEMPTS) look again.
        publicConfiguration.connectionPool.retryConnectionEstablishment = false
        return try await HTTPClient.withHTTPClient(configuration: configuration) { anyAddress in
            try await HTTPClient.withHTTPClient(configuration: publicConfiguration) { publicOnly in
                try await body(DeliveryClients(anyAddress: anyAddress, publicOnly: publicOnly))
            }
        }
    }
}
