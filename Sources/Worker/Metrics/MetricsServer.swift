// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import Shared
import Prometheus

/// The worker's HTTP endpoints on `METRICS_PORT`: `GET /healthz` (the process runs), `GET /readyz`
/// (the database answers) and `GET /metrics` (Prometheus text; queue gauges are sampled from the
/// database at each scrape).
enum MetricsServer {
    /// How long a scrape waits for the queue sample before it answers with the previous one.
    static let sampleTimeout: Duration = .seconds(2)

    static func build(
        host: String = "0.0.0.0", port: Int, metrics: WorkerMetrics, statistics: QueueStatistics, readiness: DatabaseReadiness,
        logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/healthz") { _, _ in json(.ok, #"{"status":"ok"}"#) }
        router.get("/readyz") { _, context in
            await readiness.check(logger: context.logger)
                ? json(.ok, #"{"status":"ready"}"#)
                : json(.serviceUnavailable, #"{"error":{"code":"unavailable","message":"the database does not answer"}}"#)
        }
        router.get("/metrics") { _, context in
            await sample(statistics, into: metrics, logger: context.logger)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
        return Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: IdleConnections.timeout)),
            configuration: .init(address: .hostname(host, port: port), serverName: "sluice-worker"),
            logger: logger)
    }

    private static func json(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// Reads the queue depths into the gauges; on failure the gauges keep their last values.
    static func sample(_ statistics: QueueStatistics, into metrics: WorkerMetrics, logger: Logger) async {
        do {
            try await withTimeout(sampleTimeout) {
                let paused = Set(try await statistics.pausedQueues())
                for queue in QueueName.all {
                    let depth = try await statistics.depth(of: queue, countingFinished: false)
                    metrics.recordDepth(depth, of: queue, paused: paused.contains(queue.rawValue))
                }
            }
        } catch {
            logger.warning("sampling queue depth failed", metadata: ["error": "\(ErrorText.describe(error))"])
        }
    }
}
