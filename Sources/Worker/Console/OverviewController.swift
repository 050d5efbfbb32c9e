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

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/") { request, context in
            let overview = try await ConsoleOverview.load(client: services.client, logger: context.logger)
            let now = Date()
            let queues: [[String: Any]] = overview.queues.map { activity in
                [
                    "name": activity.queue.rawValue, "paused": activity.paused, "pending": activity.depth.pending,
                    "running": activity.depth.running, "dead": activity.depth.dead,
                    "oldestAge": ConsoleFormat.age(activity.depth.oldestRunnableAgeSeconds),
                    "doneLastHour": activity.chart.done.reduce(0, +), "failedLastHour": activity.chart.failed.reduce(0, +),
                    "chart": activity.chart.svg,
                ]
            }
            let checkpoints: [[String: Any]] = overview.checkpoints.map {
                [
                    "stream": $0.stream, "checkpoint": ConsoleFormat.time($0.checkpoint),
                    "lag": ConsoleFormat.age(now.timeIntervalSince($0.checkpoint)), "lastSuccess": ConsoleFormat.time($0.lastSuccessAt),
                    "lastError": $0.lastError ?? "",
                ]
            }
            return renderer.page(
                "overview", title: "Overview", section: .overview, request: request, context: context,
                values: [
                    "queues": queues, "checkpoints": checkpoints, "hasCheckpoints": !checkpoints.isEmpty,
                    "endpoints": overview.endpoints.map(EndpointsController.row), "hasEndpoints": !overview.endpoints.isEmpty,
                    "refresh": Self.refreshSeconds, "generatedAt": ConsoleFormat.time(now),
                ])
        }
    }
}
