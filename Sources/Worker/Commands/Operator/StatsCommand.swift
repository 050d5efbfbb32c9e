// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker stats [--json]`: depth of every queue by state, the oldest runnable job's age, what is
/// paused, and the unfinished and dead jobs per source and type.
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Queue depth by state, oldest runnable age, dead-letter count, per source/type.",
        discussion: OperatorSession.help)

    @Flag(help: "Print one JSON object for scripts.")
    var json = false

    func run() async throws {
        let report = try await OperatorSession.with { client, logger in
            try await QueueStatistics(client: client, logger: logger).report()
        }
        print(json ? try OperatorSession.json(report) : Self.text(report))
    }

    static func text(_ report: QueueStatistics.Report) -> String {
        var queues = TextTable("QUEUE", "PENDING", "RUNNING", "DONE", "DEAD", "DISCARDED", "OLDEST RUNNABLE", "PAUSED")
        for queue in QueueName.all {
            let depth = report.queues[queue.rawValue] ?? QueueStatistics.Depth()
            queues.add(
                queue.rawValue, "\(depth.pending)", "\(depth.running)", "\(depth.done)", "\(depth.dead)", "\(depth.discarded)",
                age(depth.oldestRunnableAgeSeconds), report.paused.contains(queue.rawValue) ? "yes" : "no")
        }
        guard !report.byType.isEmpty else { return queues.rendered }
        var types = TextTable("QUEUE", "SOURCE", "TYPE", "PENDING", "RUNNING", "DEAD")
        for row in report.byType {
            types.add(row.queue, row.source, row.type, "\(row.pending)", "\(row.running)", "\(row.dead)")
        }
        return queues.rendered + "\n\n" + types.rendered
    }

    /// `0s`, `42s`, `3m20s`, `5h2m`.
    static func age(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3_600: return "\(whole / 60)m\(whole % 60)s"
        default: return "\(whole / 3_600)h\(whole % 3_600 / 60)m"
        }
    }
}
