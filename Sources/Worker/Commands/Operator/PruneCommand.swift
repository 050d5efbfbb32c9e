// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker prune --older-than DURATION`: deletes finished (`done`) queue rows, in bounded batches.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete done queue rows older than a duration; never pending, running, dead or discarded ones.",
        discussion: """
            Keeps the queue tables small. Entitlements, transactions, their history and the ledger of \
            applied events are never touched.

            \(OperatorSession.help)
            """)

    @Option(name: .customLong("older-than"), help: "Rows that finished longer ago than this: 90s, 30m, 2h, 7d, 2w.")
    var olderThan: String

    @OptionGroup var queue: QueueOption

    @Option(name: .customLong("batch-size"), help: "Rows deleted per transaction.")
    var batchSize = 1_000

    func validate() throws {
        guard TimeExpression.seconds(olderThan) != nil else {
            throw ValidationError("--older-than must be a duration like 30d, 12h or 90m")
        }
        guard (1...100_000).contains(batchSize) else { throw ValidationError("--batch-size must be in 1...100000") }
    }

    func run() async throws {
        let cutoff = Date().addingTimeInterval(-(TimeExpression.seconds(olderThan) ?? 0))
        let queues = try queue.queues()
        let batchSize = self.batchSize
        let deleted = try await OperatorSession.with { client, logger in
            try await QueuePruner(client: client, logger: logger).prune(finishedBefore: cutoff, queues: queues, batchSize: batchSize)
        }
        print(queues.map { "pruned \(deleted[$0] ?? 0) done \($0.rawValue)" }.joined(separator: "\n"))
    }
}
