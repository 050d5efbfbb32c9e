// SPDX-License-Identifier: Apache-2.0
import Hummingbird

/// Counts every answered request by route and status (`sluice_ingest_requests_total`).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: IngestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        metrics.countRequest(route: context.endpointPath ?? "unmatched", status: response.status.code)
        return response
    }
}
