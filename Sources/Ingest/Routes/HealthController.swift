// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import Prometheus
import Shared

/// `GET /healthz` (the process runs), `GET /readyz` (the database answers) and `GET /metrics`.
///
/// Only `/healthz`, which costs nothing, is served on the public port too (``addLiveness(to:)``):
/// `/readyz` costs a query and `/metrics` tells how the service is doing, so both are on the
/// admin port only (`INGEST_ADMIN_PORT`).
struct HealthController<Context: RemoteAddressRequestContext>: Sendable {
    let readiness: DatabaseReadiness
    let registry: PrometheusCollectorRegistry

    static func addLiveness(to router: Router<Context>) {
        router.get("/healthz") { _, _ in WebhookController<Context>.json(.ok, #"{"status":"ok"}"#) }
    }

    func addRoutes(to router: Router<Context>) {
        Self.addLiveness(to: router)
        router.get("/readyz") { _, context in try await ready(context) }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    private func ready(_ context: Context) async throws -> Response {
        guard await readiness.check(logger: context.logger) else { throw APIError.unavailable("the database does not answer") }
        return WebhookController<Context>.json(.ok, #"{"status":"ready"}"#)
    }
}
