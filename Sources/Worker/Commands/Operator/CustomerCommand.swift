// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker customer ID [--json]`: a customer's whole story, as the console's customer page shows it.
struct CustomerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customer",
        abstract: "A customer's entitlements, ledger and the timeline of every event that touched them.",
        discussion: """
            ID is a user id, an email address, an Apple originalTransactionId or transactionId, a Stripe \
            customer, subscription, payment intent or charge id, a Google Play purchase token or order id \
            (GPA.…), or an entity key (apple:2000…, apple:sandbox:2000…, play:<token>). \
            The timeline is newest first: each stored event with its origin (webhook, sync, recovery, \
            reconciliation, rebuild, clock), the decision it produced (applied, stale, recorded, or its \
            queue state while not applied) and the outgoing events and deliveries it caused. Exits 1 \
            when nothing is stored about ID; when it names several users, prints them and exits 1.

            \(OperatorSession.help)
              ENTITLEMENT_LEEWAY_SECONDS, SANDBOX_ACCESS, SANDBOX_USERS   as in worker run, for is_active
              EVENT_SIGNING_KEY         as in worker run: which appAccountToken registrations count

            What it prints came from the database and the providers: control characters in it are \
            shown escaped (\\u{1B}), never sent to the terminal.
            """)

    @Argument(help: "Who: a user id, email, originalTransactionId, Stripe id or entity key.")
    var id: String

    @Option(help: "At most this many timeline entries and transactions (1–2000).")
    var limit = 200

    @Flag(help: "Print JSON for scripts.")
    var json = false

    func validate() throws {
        guard (1...2_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 2000") }
    }

    func run() async throws {
        let (id, limit) = (id, limit)
        let environment = try EnvironmentValues.process()
        let access = try AccessRules(environment: environment)
        let (leeway, sandboxAccess) = (access.leeway, access.sandboxAccess)
        let eventProof = try EventProof.configured(by: environment)
        let story = try await OperatorSession.with { client, logger in
            let subjects = try await CustomerLookup(client: client, logger: logger).find(id)
            guard subjects.count <= 1 else {
                throw CommandFailure("\(id) names \(subjects.count) customers: \(subjects.map(\.reference).joined(separator: ", "))")
            }
            guard let subject = subjects.first,
                let story = try await CustomerStory.load(
                    subject, client: client, leeway: leeway, sandboxAccess: sandboxAccess, eventProof: eventProof, limit: limit,
                    logger: logger)
            else { throw CommandFailure("nothing is stored about \(id)") }
            return story
        }
        OperatorSession.show(json ? try OperatorSession.json(story) : story.text)
    }
}
