// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// Writes, inside the caller's transaction and in **one statement**, everything applying one event
/// sends out and records: the outgoing events (numbered from `outgoing_event_sequence`, their
/// bodies completed with the number), one delivery per enabled endpoint whose filters take each
/// (`sluice_endpoint_takes`), the raw notification's deliveries for `raw_apple` endpoints, and the
/// event's `applied_events` record. Folding them into the statement that records the event keeps
/// announcing free of extra round trips.
///
/// The caller has saved the entitlements and transactions the events are about in the same
/// transaction, so their rows are locked: a later change of one waits, and gets a larger number.
struct OutgoingEventWriter: Sendable {
    let logger: Logger

    /// The `applied_events` row of the event applied.
    struct Record: Sendable {
        var eventID: Int64
        var entityKey: String?
        var outcome: EventOutcome
        var detail: String?
    }

    /// An applied App Store Server Notification, sent byte for byte to the `raw_apple` endpoints of its environment.
    struct RawNotification: Sendable {
        var eventID: Int64
        var environment: PurchaseEnvironment
    }

    /// - Parameters:
    ///   - events: the events to store; all share `causeEventID`.
    ///   - record: how the applied event is recorded, if one was applied.
    ///   - rawNotification: the notification to forward as it is, if any.
    /// - Returns: how many deliveries were made.
    @discardableResult
    func write(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, on connection: PostgresConnection
    ) async throws -> Int {
        guard !events.isEmpty || record != nil || rawNotification != nil else { return 0 }
        let tails = try events.map { String(decoding: try $0.renderedTail(), as: UTF8.self) }
        let causeEventID = events.first?.causeEventID
        let occurredAt = events.first?.occurredAt ?? Date()
        let rows = try await connection.query(
            """
            WITH recorded AS (
                INSERT INTO applied_events (event_id, entity_key, outcome, detail)
                SELECT \(record?.eventID)::bigint, \(record?.entityKey)::text, \(record?.outcome.rawValue)::text, \(record?.detail)::text
                WHERE \(record != nil)
                ON CONFLICT (event_id) DO NOTHING
            ),
            input AS (
                SELECT * FROM unnest(
                    \(events.map(\.messageID))::text[], \(events.map(\.type.rawValue))::text[], \(events.map(\.entityKey))::text[],
                    \(events.map(\.orderingKey))::text[], \(events.map(\.provider))::text[], \(events.map(\.environment.rawValue))::text[],
                    \(events.map { $0.userID ?? "" })::text[], \(tails)::text[]
                ) WITH ORDINALITY AS i(message_id, type, entity_key, ordering_key, provider, environment, user_id, tail, n)
            ),
            numbered AS (SELECT input.*, nextval('outgoing_event_sequence') AS sequence FROM input ORDER BY n),
            stored AS (
                INSERT INTO outgoing_events (message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence,
                    cause_event_id, payload, created_at)
                SELECT message_id, type, entity_key, ordering_key, provider, environment, NULLIF(user_id, ''), sequence,
                    \(causeEventID)::bigint, convert_to('{"sequence":' || sequence || ',' || tail, 'UTF8'), \(occurredAt)
                FROM numbered
                RETURNING id, message_id, type, ordering_key, provider, environment, sequence, payload
            ),
            announced AS (
                INSERT INTO deliveries (event_id, outgoing_event_id, source, type, external_id, target, payload, endpoint_id, ordering_key, sequence)
                SELECT \(causeEventID)::bigint, stored.id, stored.provider, stored.type, stored.message_id, e.url, stored.payload, e.id,
                    stored.ordering_key, stored.sequence
                FROM stored, endpoints e
                WHERE e.disabled_at IS NULL AND NOT e.raw_apple
                  AND sluice_endpoint_takes(e, stored.type, stored.provider, stored.environment)
                RETURNING id
            ),
            forwarded AS (
                INSERT INTO deliveries (event_id, source, type, external_id, target, payload, endpoint_id)
                SELECT events.id, events.source, events.type, events.external_id, e.url, events.payload, e.id
                FROM events, endpoints e
                WHERE \(rawNotification != nil) AND events.id = \(rawNotification?.eventID)::bigint
                  AND e.raw_apple AND e.disabled_at IS NULL
                  AND (e.environment = 'all' OR e.environment = \(rawNotification?.environment.rawValue)::text)
                ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO NOTHING
                RETURNING id
            )
            SELECT (SELECT count(*) FROM announced) + (SELECT count(*) FROM forwarded)
            """, logger: logger)
        var deliveries = 0
        for try await count in rows.decode(Int64.self) { deliveries = Int(count) }
        return deliveries
    }
}
