// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared
import Foundation

/// `worker dlq show ID`: one item, its payload summary and every attempt with its error.
struct DLQShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One dead item: payload summary, every attempt with its error.", discussion: OperatorSession.help)

    @Argument(help: "The item, as dlq list prints it (events/42).")
    var id: String

    @Flag(help: "Print one JSON object, payload included.")
    var json = false

    /// The payload text shown on a terminal; `--json` prints all of it.
    static let payloadPreview = 600

    func run() async throws {
        let text = id
        let detail = try await OperatorSession.with { client, logger in
            let letters = DeadLetters(client: client, logger: logger)
            let item = try await letters.resolve(text)
            guard let detail = try await letters.detail(item) else { throw CommandFailure("no queue item \(item)") }
            return detail
        }
        OperatorSession.show(json ? try OperatorSession.json(detail) : Self.text(detail))
    }

    static func text(_ detail: QueueItemDetail) -> String {
        let item = detail.item
        var lines = [
            "\(item.id)  \(detail.state)",
            "source       \(item.source)",
            "type         \(item.type)",
            "external id  \(item.externalID)",
            "received at  \(detail.receivedAt.formatted(.iso8601))",
            // `finished_at` is when a job ended, either way: a done one never failed.
            (detail.state == "done" ? "done at      " : "failed at    ") + (item.failedAt.map { $0.formatted(.iso8601) } ?? "-"),
            "attempts     \(item.attempts)",
            "last error   \(item.lastError ?? "-")",
        ]
        for (name, value) in detail.summary.sorted(by: { $0.key < $1.key }) {
            lines.append(name.replacingOccurrences(of: "_", with: " ").padding(toLength: 12, withPad: " ", startingAt: 0) + " \(value)")
        }
        let payload = detail.payload ?? "(\(detail.payloadBase64.count) base64 characters, not UTF-8)"
        lines.append("payload      \(payload.prefix(payloadPreview))\(payload.count > payloadPreview ? "…" : "")")
        lines.append("")
        guard !detail.history.isEmpty else {
            lines.append("no failed attempts recorded")
            return lines.joined(separator: "\n")
        }
        var history = TextTable("ATTEMPT", "FINISHED AT", "WORKER", "STATUS", "MS", "ERROR")
        for attempt in detail.history {
            history.add(
                "\(attempt.attempt)", attempt.finishedAt.formatted(.iso8601), attempt.worker ?? "-",
                attempt.httpStatus.map(String.init) ?? "-", attempt.durationMilliseconds.map { String(Int($0.rounded())) } ?? "-",
                attempt.error)
        }
        lines.append(history.rendered)
        return lines.joined(separator: "\n")
    }
}
