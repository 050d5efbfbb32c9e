// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import Shared

/// `/`: both queues, the last hour, recovery and endpoint health; the page reloads itself.
struct OverviewController: Sendable {
    static let refreshSeconds = 15

    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        router.get("/", use: overview)
    }

    @Sendable func overview(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let overview = try await ConsoleOverview.load(client: services.client, logger: context.logger)
        return renderer.page(
            OverviewPage(overview, refresh: Self.refreshSeconds, now: Date()), title: "Overview", section: .overview, request: request,
            context: context)
    }
}
