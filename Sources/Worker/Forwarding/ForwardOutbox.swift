// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// What applying an event sends out, written inside the transaction that applies it (an outbox):
/// the outgoing events that announce its changes, and the raw Apple notification for the
/// endpoints that take it (`raw_apple`, and the `FORWARD_TARGETS` endpoints). Nothing leaves
/// unless the change committed.
struct ForwardOutbox: Sendable {
    /// `ENTITLEMENT_LEEWAY_SECONDS`: `is_active` in announcements reads as the read API's.
    let leeway: TimeInterval
    /// Called after a transaction that created deliveries committed, to wake this process's forwarder.
    let onCreated: @Sendable () -> Void

    init(leeway: TimeInterval, onCreated: @escaping @Sendable () -> Void) {
        self.leeway = leeway
        self.onCreated = onCreated
    }

    /// The announcer of the changes that applying `job` makes.
    func announcer(for job: ClaimedJob, logger: Logger) -> ChangeAnnouncer {
        ChangeAnnouncer(cause: EventCause(job: job), causeEventID: job.id, leeway: leeway, writer: OutgoingEventWriter(logger: logger))
    }

    /// Adds one delivery of the stored notification `eventID`, byte for byte, per enabled endpoint
    /// that takes raw Apple notifications of its environment.
    ///
    /// - Returns: how many deliveries were made.
    @discardableResult
    func enqueueRawApple(eventID: Int64, environment: PurchaseEnvironment, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query(
            """
            INSERT INTO deliveries (event_id, source, type, external_id, target, payload, endpoint_id)
            SELECT events.id, events.source, events.type, events.external_id, e.url, events.payload, e.id
            FROM events, endpoints e
            WHERE events.id = \(eventID) AND e.raw_apple AND e.disabled_at IS NULL
              AND (e.environment = 'all' OR e.environment = \(environment.rawValue))
            ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO NOTHING
            RETURNING id
            """, logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}

/// Announces the changes one applied event makes (``StateWriter``): for each entitlement or
/// transaction whose visible state changed, one outgoing event.
struct ChangeAnnouncer: Sendable {
    var cause: EventCause
    var causeEventID: Int64?
    var leeway: TimeInterval
    var writer: OutgoingEventWriter
    /// The time `is_active` is computed for, before and after.
    var now = Date()
}
