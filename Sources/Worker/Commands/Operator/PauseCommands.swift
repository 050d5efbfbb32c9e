// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared

/// `worker pause [--queue Q]`: every worker process stops dequeuing within a second; running jobs finish.
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop dequeuing across every worker process, without stopping them.",
        discussion: OperatorSession.help)

    @OptionGroup var options: QueueOption

    func run() async throws {
        let queues = try options.queues()
        try await OperatorSession.with { client, logger in
            for queue in queues { try await JobQueue(client: client, name: queue, logger: logger).pause() }
        }
        OperatorSession.show("paused \(queues.map(\.rawValue).joined(separator: ", "))")
    }
}

/// `worker resume [--queue Q]`: every worker process dequeues again.
struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Restart dequeuing across every worker process.",
        discussion: OperatorSession.help)

    @OptionGroup var options: QueueOption

    func run() async throws {
        let queues = try options.queues()
        try await OperatorSession.with { client, logger in
            for queue in queues { try await JobQueue(client: client, name: queue, logger: logger).resume() }
        }
        OperatorSession.show("resumed \(queues.map(\.rawValue).joined(separator: ", "))")
    }
}
