// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker stats [--json]`: depth of every queue by state, the oldest runnable job's age, what is
/// paused, the unfinished and dead jobs per source and type, and the recovery checkpoints.
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Queue depth by state, oldest runnable age, dead-letter count, per source/type.",
        discussion: OperatorSession.help)

    @Flag(help: "Print one JSON object for scripts.")
    var json = false

    /// The queue report, plus `recovery_checkpoints` in JSON.
    struct Output: Encodable {
        var report: QueueStatistics.Report
        var checkpoints: [RecoveryCheckpoints.Stream]

        enum CodingKeys: String, CodingKey { case recoveryCheckpoints = "recovery_checkpoints" }

        func encode(to encoder: any Encoder) throws {
            try report.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(checkpoints, forKey: .recoveryCheckpoints)
        }
    }

    func run() async throws {
        let output = try await OperatorSession.with { client, logger in
            Output(
                report: try await QueueStatistics(client: client, logger: logger).report(),
                checkpoints: try await RecoveryCheckpoints(client: client, logger: logger).all())
        }
        OperatorSession.show(json ? try OperatorSession.json(output) : Self.text(output.report) + Self.text(output.checkpoints))
    }

    /// The recovery streams, when there are any.
    static func text(_ checkpoints: [RecoveryCheckpoints.Stream]) -> String {
        guard !checkpoints.isEmpty else { return "" }
        var table = TextTable("RECOVERY STREAM", "CHECKPOINT", "BEHIND", "LAST SUCCESS", "LAST ERROR")
        for stream in checkpoints {
            table.add(
                stream.stream, stream.checkpoint.formatted(.iso8601), age(Date().timeIntervalSince(stream.checkpoint)),
                stream.lastSuccessAt?.formatted(.iso8601) ?? "never", stream.lastError.map { String($0.prefix(60)) } ?? "")
        }
        return "\n\n" + table.rendered
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
