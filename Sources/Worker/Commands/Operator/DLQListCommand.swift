// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared
import Foundation

/// `worker dlq list`: dead items with their last error, the most recently dead first.
struct DLQListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Dead-lettered events and deliveries with their last error.", discussion: OperatorSession.help)

    @OptionGroup var filter: QueueFilterOptions

    @Option(help: "At most this many items (1–10000).")
    var limit = 100

    @Flag(help: "Print a JSON array for scripts.")
    var json = false

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be in 1...10000") }
    }

    func run() async throws {
        let filter = try self.filter.filter()
        let limit = self.limit
        let items = try await OperatorSession.with { client, logger in
            try await DeadLetters(client: client, logger: logger).list(filter, limit: limit)
        }
        if json {
            OperatorSession.show(try OperatorSession.json(items))
            return
        }
        guard !items.isEmpty else {
            OperatorSession.show("no dead items")
            return
        }
        var table = TextTable("ID", "SOURCE", "TYPE", "EXTERNAL ID", "ATTEMPTS", "FAILED AT", "LAST ERROR")
        for item in items {
            table.add(
                item.id, item.source, item.type, item.externalID, "\(item.attempts)",
                item.failedAt.map { $0.formatted(.iso8601) } ?? "-", String((item.lastError ?? "").prefix(120)))
        }
        OperatorSession.show(table.rendered)
    }
}
