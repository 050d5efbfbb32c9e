// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Shared

/// `worker`: the queue consumer pool and the operator's commands.
@main
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Sluice's worker: applies queued payment events, and the operator's tools.",
        discussion: "Exit codes: 0 success, 1 failure (reason on stderr), 2 bad usage.",
        subcommands: [
            RunCommand.self, MigrateCommand.self, StatsCommand.self, DLQCommand.self, PauseCommand.self, ResumeCommand.self,
            PruneCommand.self, RecoverCommand.self, ReconcileCommand.self, RebuildCommand.self, EndpointsCommand.self,
            TransfersCommand.self, CustomerCommand.self, ConsoleCommand.self, ProductsCommand.self, BalanceCommand.self,
        ])

    static func main() async {
        await CommandLineEntry.main(WorkerCommand.self, name: "worker")
    }
}
