// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// `/`: both queues, the last hour, recovery and endpoint health; the page reloads itself.
struct OverviewPage: ConsolePage {
    static let template = ConsoleTemplate.overview

    struct QueueCard: Sendable {
        var name: String
        var paused: Bool
        var pending: Int
        var running: Int
        var dead: Int
        var oldestAge: String
        var doneLastHour: Int
        var failedLastHour: Int
        /// The activity chart's SVG, drawn by ``ActivityChart`` (numbers only), put in unescaped.
        var chart: String
    }

    struct CheckpointRow: Sendable {
        var stream: String
        var checkpoint: String
        var lag: String
        var lastSuccess: String
        var lastError: String
    }

    var queues: [QueueCard]
    var checkpoints: [CheckpointRow]
    var hasCheckpoints: Bool
    var endpoints: [EndpointRow]
    var hasEndpoints: Bool
    /// Seconds after which the browser reloads the page (the layout's `<meta http-equiv="refresh">`).
    var refresh: Int
    var generatedAt: String

    init(_ overview: ConsoleOverview, refresh: Int, now: Date) {
        queues = overview.queues.map { activity in
            QueueCard(
                name: activity.queue.rawValue, paused: activity.paused, pending: activity.depth.pending, running: activity.depth.running,
                dead: activity.depth.dead, oldestAge: ConsoleFormat.age(activity.depth.oldestRunnableAgeSeconds),
                doneLastHour: activity.chart.done.reduce(0, +), failedLastHour: activity.chart.failed.reduce(0, +), chart: activity.chart.svg)
        }
        checkpoints = overview.checkpoints.map {
            CheckpointRow(
                stream: $0.stream, checkpoint: ConsoleFormat.time($0.checkpoint), lag: ConsoleFormat.age(now.timeIntervalSince($0.checkpoint)),
                lastSuccess: ConsoleFormat.time($0.lastSuccessAt), lastError: $0.lastError ?? "")
        }
        hasCheckpoints = !checkpoints.isEmpty
        endpoints = overview.endpoints.map(EndpointRow.init)
        hasEndpoints = !endpoints.isEmpty
        self.refresh = refresh
        generatedAt = ConsoleFormat.time(now)
    }
}
