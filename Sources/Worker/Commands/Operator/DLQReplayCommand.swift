// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared

/// `worker dlq replay (--id ID … | --all) [filters] [--dry-run]`: dead items back in their queue,
/// attempts reset. Items that are no longer dead are left alone, so a replay may be repeated.
struct DLQReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Put dead items back in the queue, attempts reset; prints how many.",
        discussion: """
            Name items with --id (repeatable), or take every dead item with --all, narrowed by the \
            filters. An unknown id exits 1 and replays nothing.

            \(OperatorSession.help)
            """)

    @Option(name: .customLong("id"), help: "An item to replay, as dlq list prints it (events/42); repeatable.")
    var ids: [String] = []

    @Flag(help: "Replay every dead item that matches the filters.")
    var all = false

    @OptionGroup var filter: QueueFilterOptions

    @Flag(name: .customLong("dry-run"), help: "Change nothing; print what would be replayed.")
    var dryRun = false

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give either --id ID … or --all") }
        guard all || !filter.isFiltering else {
            throw ValidationError("--queue, --source, --type and --since narrow --all; with --id name the items instead")
        }
    }

    func run() async throws {
        let (ids, all, dryRun) = (self.ids, self.all, self.dryRun)
        let filter = try self.filter.filter()
        let result = try await OperatorSession.with { client, logger in
            let letters = DeadLetters(client: client, logger: logger)
            if all { return try await letters.replayAll(filter, dryRun: dryRun) }
            return try await letters.replay(try await letters.resolve(ids, verb: "replayed"), dryRun: dryRun)
        }
        for (item, state) in result.notDead {
            OperatorSession.show("\(item) is \(state), not dead: left as it is")
        }
        if dryRun {
            for item in result.replayed { OperatorSession.show("would replay \(item)") }
            OperatorSession.show("would replay \(result.replayed.count)")
        } else {
            OperatorSession.show("replayed \(result.replayed.count)")
        }
    }
}
