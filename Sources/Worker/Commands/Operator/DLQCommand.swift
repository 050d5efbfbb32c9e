// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

/// `worker dlq`: the dead-lettered events and deliveries.
struct DLQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show, replay, drain and discard dead-lettered events and deliveries.",
        discussion: """
            Dead items are named by ids like events/42 or deliveries/7, as `dlq list` prints them; \
            `dlq show` and `dlq replay --id` also take a bare number when only one queue has it.
            """,
        subcommands: [DLQListCommand.self, DLQShowCommand.self, DLQReplayCommand.self, DLQDrainCommand.self, DLQDiscardCommand.self])
}
