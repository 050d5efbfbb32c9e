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
            applied events are never touched. A pruned event's (source, external_id) key is kept in \
            event_keys, so the event stays a duplicate if a provider sends it again or recovery fetches \
            it again; keys are deleted after --keep-keys (at least 180 days, Apple's notification \
            history, unless --force). Pruned events are gone for worker rebuild.

            \(OperatorSession.help)
            """)

    @Option(name: .customLong("older-than"), help: "Rows that finished longer ago than this: 90s, 30m, 2h, 7d, 2w.")
    var olderThan: String

    @OptionGroup var queue: QueueOption

    @Option(name: .customLong("batch-size"), help: "Rows deleted per transaction.")
    var batchSize = 1_000

    @Option(name: .customLong("keep-keys"), help: "How long the dedup keys of pruned events are kept (default 400d).")
    var keepKeys = "400d"

    @Flag(help: "Allow --keep-keys shorter than 180 days: an event re-sent or recovered after that is stored and applied again.")
    var force = false

    func validate() throws {
        guard TimeExpression.seconds(olderThan) != nil else {
            throw ValidationError("--older-than must be a duration like 30d, 12h or 90m")
        }
        guard (1...100_000).contains(batchSize) else { throw ValidationError("--batch-size must be in 1...100000") }
        guard let keep = TimeExpression.seconds(keepKeys) else { throw ValidationError("--keep-keys must be a duration like 400d") }
        guard keep >= QueuePruner.minimumKeyRetention || force else {
            throw ValidationError(
                "--keep-keys shorter than 180d lets Apple's re-sent notifications (180 days of history) in again; add --force if you mean it")
        }
    }

    func run() async throws {
        let cutoff = Date().addingTimeInterval(-(TimeExpression.seconds(olderThan) ?? 0))
        let queues = try queue.queues()
        let batchSize = self.batchSize
        let keysCutoff = Date().addingTimeInterval(-(TimeExpression.seconds(keepKeys) ?? QueuePruner.defaultKeyRetention))
        let (deleted, keys) = try await OperatorSession.with { client, logger in
            let pruner = QueuePruner(client: client, logger: logger)
            let deleted = try await pruner.prune(finishedBefore: cutoff, queues: queues, batchSize: batchSize)
            return (deleted, try await pruner.pruneKeys(receivedBefore: keysCutoff, batchSize: batchSize))
        }
        OperatorSession.show((queues.map { "pruned \(deleted[$0] ?? 0) done \($0.rawValue)" } + ["forgot \(keys) event keys older than \(keepKeys)"])
            .joined(separator: "\n"))
    }
}
