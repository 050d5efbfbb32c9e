// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared

/// Creates the deliveries of an applied Apple notification, one per forward target, inside the
/// transaction that applies it: the notification is forwarded if and only if it was applied.
struct ForwardOutbox: Sendable {
    let targets: [ForwardTarget]
    /// Called after a transaction that created deliveries committed, to wake this process's forwarder.
    let onCreated: @Sendable () -> Void

    /// No targets: nothing is forwarded.
    static let none = ForwardOutbox(targets: [], onCreated: {})

    /// Adds one delivery per target for the event row `eventID`, copying its payload in the database.
    func enqueue(eventID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        guard !targets.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO deliveries (event_id, source, type, external_id, target, payload)
            SELECT events.id, events.source, events.type, events.external_id, target, events.payload
            FROM events, unnest(\(targets.map(\.url))::text[]) AS target
            WHERE events.id = \(eventID)
            ON CONFLICT (event_id, target) DO NOTHING
            """, logger: logger)
    }
}
