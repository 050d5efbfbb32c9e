// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// Announces access that ended by the clock: an entitlement whose `expires_at` (or grace
/// period's end) plus the leeway passed with no ending event reads `is_active: false` from then
/// on, and receivers learn it as `entitlement.expired` with cause `clock`.
///
/// Each pass takes the rows still marked as announced active whose time ran out, locked with
/// `SKIP LOCKED` so that workers sweeping at once, or a handler applying a renewal, never take the
/// same row twice; it writes their events and clears the mark in the same transaction. Works with
/// no provider API credentials.
struct ClockExpirySweep: Sendable {
    let client: PostgresClient
    let outbox: ForwardOutbox
    let logger: Logger
    /// Rows per transaction.
    var batchSize = 200

    /// Sweeps until no row is due.
    ///
    /// - Parameter now: the time access is judged at; each batch reads the clock when `nil`.
    /// - Returns: how many entitlements were announced expired.
    @discardableResult
    func sweep(now: Date? = nil) async throws -> Int {
        var total = 0
        while true {
            let (swept, deliveries) = try await sweepBatch(now: now ?? Date())
            total += swept
            if deliveries > 0 { outbox.onCreated() }
            if swept < batchSize { return total }
        }
    }

    private func sweepBatch(now: Date) async throws -> (swept: Int, deliveries: Int) {
        let leeway = outbox.leeway
        let grants = await outbox.catalog?.current() ?? [:]
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT id AS row_id, \(unescaped: EntitlementColumns.list) FROM entitlements
                WHERE announced_active AND status IN ('active', 'trialing', 'cancelled', 'grace_period')
                  AND (CASE WHEN status = 'grace_period' THEN COALESCE(grace_period_expires_at, expires_at) ELSE expires_at END)
                      + make_interval(secs => \(leeway)) <= \(now)
                ORDER BY expires_at LIMIT \(batchSize)
                FOR UPDATE SKIP LOCKED
                """, logger: logger)
            var due: [(UUID, EntitlementState)] = []
            for try await row in rows {
                due.append((try row.makeRandomAccess()["row_id"].decode(UUID.self), try EntitlementColumns.decode(row)))
            }
            let announcer = ChangeAnnouncer(
                cause: EventCause(provider: "apple", origin: .clock), causeEventID: nil, leeway: leeway,
                sandboxAccess: outbox.sandboxAccess, writer: OutgoingEventWriter(logger: logger), now: now, grants: grants)
            var events: [OutgoingEvent] = []
            for (id, entitlement) in due where !entitlement.isActive(at: now, leeway: leeway) {
                var clock = announcer
                clock.cause.provider = EventCause.provider(of: entitlement.source)
                events.append(clock.event(.entitlementExpired, entitlement: entitlement, id: id, previous: entitlement, previousIsActive: true))
            }
            let deliveries = try await announcer.writer.write(events, on: connection)
            try await connection.query(
                "UPDATE entitlements SET announced_active = false WHERE id = ANY(\(due.map(\.0)))", logger: logger)
            return (due.count, deliveries)
        }
    }
}
