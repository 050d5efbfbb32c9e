// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared

/// `worker dlq discard --id ID …`: dead items marked `discarded`, kept stored, never applied.
struct DLQDiscardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discard",
        abstract: "Mark dead items discarded (kept, never applied); prints how many.",
        discussion: """
            Items that are not dead are left alone. An unknown id exits 1 and discards nothing. To \
            keep a copy first, or to discard by filter, use dlq drain.

            \(OperatorSession.help)
            """)

    @Option(name: .customLong("id"), help: "An item to discard, as dlq list prints it (events/42); repeatable.")
    var ids: [String] = []

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("name the items with --id ID …") }
    }

    func run() async throws {
        let ids = ids
        let (discarded, named) = try await OperatorSession.with { client, logger in
            let letters = DeadLetters(client: client, logger: logger)
            let items = try await letters.resolve(ids, verb: "discarded")
            return (try await letters.discard(items), items)
        }
        for item in named where !discarded.contains(item) { OperatorSession.show("\(item) is not dead: left as it is") }
        OperatorSession.show("discarded \(discarded.count)")
    }
}
