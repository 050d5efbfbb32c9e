// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared

/// Announces every balance change as `balance.changed` (docs/webhooks.md): each ledger row is
/// queued as due by the statement that writes it (`balance_announcements_due`). Each pass, in one
/// transaction, takes the due rows off that queue in ledger order, and writes their outgoing
/// events through the one write path (``OutgoingEventWriter``), so a user's events carry increasing `sequence`s in the order the balances changed, whether the
/// API, an operator or a purchase changed them. Runs in the worker holding the
/// `balance-announce` lease, every second; a pass goes on, ``batch`` rows a transaction, while it
/// finds full batches, so the announcements keep up with any rate of changes, for up to
/// ``passBudget``: a backlog larger than that is taken up by the passes after it.
struct BalanceAnnouncer: Service, CustomStringConvertible {
    static let interval: Duration = .seconds(1)
    static let batch = 200
    /// How long one pass may take before it is abandoned (it runs on as overrun work) and the
    /// next is tried: a pass stuck on a database that went away never holds up shutdown. Short,
    /// so that the lease is too (21 s, ``MaintenanceLease/term(interval:requested:)``): a worker
    /// killed holding it leaves the announcements waiting that long at most, not a minute. A pass
    /// cut short by it has committed its batches of ``batch`` rows; the next goes on from there.
    static let passTimeLimit: Duration = .seconds(10)
    /// How long a pass goes on taking full batches: half its time limit, so that a large backlog
    /// (after the announcer was stopped a while) ends each pass in the normal way, not by the
    /// limit, which is recorded and logged as a failure.
    static let passBudget: Duration = passTimeLimit / 2

    let client: PostgresClient
    let lease: MaintenanceLease
    /// Wakes this process's deliveries after a pass that made some.
    let onCreated: @Sendable () -> Void
    let logger: Logger

    var description: String { "BalanceAnnouncer" }

    func run() async throws {
        await lease.runPeriodically(every: Self.interval, failure: "announcing balance changes failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease: the rows announced, or `nil` when another holds it.
    /// It takes batches while they come full, for up to `budget`.
    @discardableResult
    func runOnce(budget: Duration = passBudget) async throws -> Int? {
        let announcer = self
        return try await lease.ifHeld(interval: Self.interval, timeLimit: Self.passTimeLimit) {
            let started = ContinuousClock.now
            var announced = 0
            var last: Int
            repeat {
                try Task.checkCancellation()
                last = try await announcer.announce()
                announced += last
            } while last == Self.batch && started.duration(to: .now) < budget
            return announced
        }
    }

    /// Announces what is due, whoever holds the lease (tests; the lease keeps passes apart).
    func announce() async throws -> Int {
        let (announced, deliveries) = try await client.withTransaction(logger: logger) { connection -> (Int, Int) in
            let store = BalanceStore(connection: connection, logger: logger)
            let due = try await store.takeUnannounced(limit: Self.batch)
            guard !due.isEmpty else { return (0, 0) }
            let now = Date()
            let events = due.map { Self.event($0, at: now) }
            let deliveries = try await OutgoingEventWriter(logger: logger).write(events, on: connection)
            return (due.count, deliveries)
        }
        if deliveries > 0 { onCreated() }
        return announced
    }

    /// The `balance.changed` event of one ledger row.
    static func event(_ due: BalanceStore.Unannounced, at now: Date) -> OutgoingEvent {
        let row = due.row
        let cause: EventCause
        var environment = PurchaseEnvironment.production
        if let event = due.cause {
            cause = EventCause(source: event.source, type: event.type, externalID: event.externalID, origin: event.origin)
            if let stored = event.environment?.lowercased(), stored == "sandbox" || stored == "test" { environment = .sandbox }
        } else {
            let origin: EventCause.Origin = switch row.cause {
            case .operator: .operator
            case .expiry: .clock
            default: .api
            }
            cause = EventCause(provider: "sluice", origin: origin)
        }
        let orderingKey = "balance:" + row.userID
        return OutgoingEvent(
            messageID: OutgoingEvent.newMessageID(), type: .balanceChanged, occurredAt: row.createdAt, orderingKey: orderingKey,
            entityKey: orderingKey, provider: cause.provider, environment: environment, userID: row.userID, cause: cause,
            causeEventID: nil, data: .balance(row, transactionID: due.key.flatMap { providerTransactionID(ofKey: $0) }))
    }

    /// The provider's transaction id a grant's, take-back's, give-back's or expiry's key names
    /// (``CurrencyGrantDecision/keys(of:)``: `grant:transaction:<source>:<environment>:<id>`; a
    /// take-back of a refund in part ends in `#<amount>`; a whole take-back or a give-back after the
    /// first give-back ends in `@<round>` (sluice_reverse_balance_change); an expiry is `expiry:`
    /// and the key of what expired).
    static func providerTransactionID(ofKey key: String) -> String? {
        if key.hasPrefix("expiry:") { return providerTransactionID(ofKey: String(key.dropFirst("expiry:".count))) }
        let parts = key.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5, parts[1] == "transaction", ["grant", "take_back", "give_back"].contains(parts[0]) else { return nil }
        var id = parts[4]
        guard parts[0] != "grant" else { return String(id) }
        if parts[0] == "take_back" { id = id.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0] }
        if let round = id.lastIndex(of: "@") {
            let number = id[id.index(after: round)...]
            if !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }) { id = id[..<round] }
        }
        return String(id)
    }
}
