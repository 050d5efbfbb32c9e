// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker reconcile (--user ID | --all) [--dry-run]`: checks subscriptions against the provider now.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check subscriptions against Apple's and Stripe's current answer and correct what differs.",
        discussion: """
            With --user, every subscription of that user; with --all, every one that is due (past its \
            expiry with no ending event, or silent for RECONCILE_AFTER_SECONDS), as worker run does in \
            batches. What the provider says differently is stored as an event of its own and applied by \
            the workers. Prints unchanged / corrected / skipped.

            \(RecoverySession.help)
            """)

    @Option(help: "The user whose subscriptions are checked.")
    var user: String?

    @Flag(help: "Every subscription that is due.")
    var all = false

    @Flag(name: .customLong("dry-run"), help: "Ask the providers, store nothing.")
    var dryRun = false

    @Flag(help: "Print the outcome of each entitlement as JSON.")
    var json = false

    func validate() throws {
        guard (user != nil) != all else { throw ValidationError("give either --user ID or --all") }
    }

    func run() async throws {
        let (user, dryRun, json) = (user, dryRun, self.json)
        let report = try await RecoverySession.with { recovery, logger in
            guard !recovery.isOff else {
                throw CommandFailure("reconciliation is off: set the App Store Server API key or STRIPE_API_KEY")
            }
            if let user {
                return try await recovery.reconciler.check(try await recovery.reconciler.candidates(user: user), dryRun: dryRun, logger: logger)
            }
            var report = Reconciler.Report()
            while true {
                let due = try await recovery.reconciler.due(limit: dryRun ? 100_000 : recovery.settings.reconcileBatch)
                    .filter { report.checked[$0.entityKey] == nil }
                if due.isEmpty { break }
                report.checked.merge(try await recovery.reconciler.check(due, dryRun: dryRun, logger: logger).checked) { $1 }
            }
            return report
        }
        OperatorSession.show(json ? try OperatorSession.json(report.checked) : (dryRun ? "dry run: " : "") + report.text)
    }
}
