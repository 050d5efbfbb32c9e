// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Stores an outgoing event and its deliveries inside the caller's transaction, in one statement:
/// the event is numbered (`outgoing_event_sequence`), its body completed with that number, and one
/// delivery made for every enabled endpoint whose filters take it.
///
/// The caller has saved the entitlement or transaction the event is about in the same
/// transaction, so its row is locked: a later change of it waits, and gets a larger number.
struct OutgoingEventWriter: Sendable {
    let logger: Logger

    /// - Returns: how many deliveries were made.
    @discardableResult
    func write(_ event: OutgoingEvent, on connection: PostgresConnection) async throws -> Int {
        let tail = ByteBuffer(data: try event.renderedTail())
        let type = event.type.rawValue
        let rows = try await connection.query(
            """
            WITH numbered AS (SELECT nextval('outgoing_event_sequence') AS sequence),
            stored AS (
                INSERT INTO outgoing_events (message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence, cause_event_id,
                    payload, created_at)
                SELECT \(event.messageID), \(type), \(event.entityKey), \(event.orderingKey), \(event.provider), \(event.environment.rawValue), \(event.userID),
                    numbered.sequence, \(event.causeEventID), convert_to('{"sequence":' || numbered.sequence || ',', 'UTF8') || \(tail),
                    \(event.occurredAt)
                FROM numbered
                RETURNING id, sequence, payload
            )
            INSERT INTO deliveries (event_id, outgoing_event_id, source, type, external_id, target, payload, endpoint_id, ordering_key, sequence)
            SELECT \(event.causeEventID), stored.id, \(event.provider), \(type), \(event.messageID), e.url, stored.payload, e.id,
                \(event.orderingKey), stored.sequence
            FROM stored, endpoints e
            WHERE e.disabled_at IS NULL AND NOT e.raw_apple
              AND sluice_endpoint_takes(e, \(type), \(event.provider), \(event.environment.rawValue))
            RETURNING id
            """, logger: logger)
        var deliveries = 0
        for try await _ in rows { deliveries += 1 }
        return deliveries
    }
}
