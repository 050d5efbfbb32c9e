// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Shared

/// `worker rebuild (--user ID | --entity KEY | --since TIME) [--dry-run]`: recomputes state from
/// the stored raw events.
struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Recompute entitlements and transactions from their stored raw events, after a handler fix.",
        discussion: """
            For each affected entity (a subscription, a purchase), in one transaction: its entitlement, \
            transactions and their history are recomputed by applying its stored events again, in \
            provider order, with this version's handlers; prints what changed. Provider links are kept. \
            Only events still stored can be used: keep done events (worker prune --older-than) at \
            least as long as you may need to rebuild. Forwards are not sent again. With \
            EVENT_SIGNING_KEY, an entity with a stored event whose proof no key verifies is not rebuilt \
            (exit 1, nothing changed): the pool would refuse that event too. Where the worker proves \
            rows, the rebuild refuses to run without the key.

            \(OperatorSession.help)
              STRIPE_ACCOUNTS           connected accounts whose events are applied, as in worker run
              EVENT_SIGNING_KEY         the worker's key: only stored events Sluice proved are applied again
            """)

    @Option(help: "Every entity of this user.")
    var user: String?

    @Option(help: "One entity key, as applied_events names it (apple:…, stripe:subscription:…).")
    var entity: String?

    @Option(help: "Every entity with an event received since: RFC 3339, or a duration ago (3d).")
    var since: String?

    @Flag(name: .customLong("dry-run"), help: "Compute and print the changes, then roll them back.")
    var dryRun = false

    @Flag(help: "Print the changes as JSON.")
    var json = false

    func validate() throws {
        guard [user != nil, entity != nil, since != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --user, --entity, --since")
        }
        if let since, TimeExpression.pointInTime(since) == nil { throw ValidationError("--since must be RFC 3339 or a duration like 3d") }
    }

    func run() async throws {
        let (user, entity, since, dryRun, json) = (user, entity, since.flatMap { TimeExpression.pointInTime($0) }, dryRun, self.json)
        let environment = try EnvironmentValues.process()
        let accounts = Set(environment.list("STRIPE_ACCOUNTS"))
        let access = try AccessRules(environment: environment)
        let (leeway, sandboxAccess) = (access.leeway, access.sandboxAccess)
        let transferBehavior = try TransferBehavior(environment: environment)
        let eventProof = try EventProof.configured(by: environment)
        let changes = try await OperatorSession.with { client, logger in
            let handlers = EventHandlers.all(
                logger: logger, stripeAccounts: accounts, transferBehavior: transferBehavior, leeway: leeway).compactMapValues { $0 as? any EventApplier }
            let rebuilder = EntityRebuilder(
                client: client, handlers: handlers, proof: eventProof, leeway: leeway, sandboxAccess: sandboxAccess, logger: logger)
            try await rebuilder.requireProofWhereRowsAreProven()
            let keys: [String]
            if let entity {
                keys = [entity]
            } else if let user {
                keys = try await rebuilder.entities(user: user)
            } else {
                keys = try await rebuilder.entities(since: since ?? Date())
            }
            var changes: [EntityRebuilder.Change] = []
            for key in keys { changes.append(try await rebuilder.rebuild(key, dryRun: dryRun)) }
            return changes
        }
        if json {
            OperatorSession.show(try OperatorSession.json(changes))
        } else {
            let changed = changes.filter { !$0.differences.isEmpty }.count
            OperatorSession.show(((dryRun ? ["dry run: "] : []) + ["\(changes.count) entities, \(changed) changed"]).joined())
            for change in changes { OperatorSession.show(change.text) }
        }
    }
}
