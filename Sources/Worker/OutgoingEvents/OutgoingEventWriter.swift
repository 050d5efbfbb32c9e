// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// Writes, inside the caller's transaction and in **one call** (`sluice_write_applied`, whose
/// statements keep their plans per connection), everything applying one event sends out and
/// records: the outgoing events (numbered from `outgoing_event_sequence`, their bodies completed
/// with the number), one delivery per enabled endpoint whose filters take each
/// (`sluice_endpoint_takes`), the raw notification's deliveries for `raw_apple` endpoints, and the
/// event's `applied_events` record; and first the event's provider links (sql/0019). Folding them
/// into the call that records the event keeps announcing free of extra round trips.
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
    ///   - links: `sluice_save_links`'s argument (``StateStore/linksToSave(_:)``), if any.
    /// - Returns: how many deliveries were made.
    @discardableResult
    func write(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, links: String? = nil,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard !events.isEmpty || record != nil || rawNotification != nil || links != nil else { return 0 }
        let tails = try events.map { String(decoding: try $0.renderedTail(), as: UTF8.self) }
        let causeEventID = events.first?.causeEventID
        let occurredAt = events.first?.occurredAt ?? Date()
        // sql/0016_write_applied_function.sql: the function keeps its statements' plans per connection.
        let rows = try await connection.query(
            """
            SELECT sluice_write_applied(
                \(record?.eventID)::bigint, \(record?.entityKey)::text, \(record?.outcome.rawValue)::text, \(record?.detail)::text,
                \(events.map(\.messageID))::text[], \(events.map(\.type.rawValue))::text[], \(events.map(\.entityKey))::text[],
                \(events.map(\.orderingKey))::text[], \(events.map(\.provider))::text[], \(events.map(\.environment.rawValue))::text[],
                \(events.map { $0.userID ?? "" })::text[], \(tails)::text[],
                \(causeEventID)::bigint, \(occurredAt)::timestamptz,
                \(rawNotification?.eventID)::bigint, \(rawNotification?.environment.rawValue)::text, \(links)::jsonb)
            """, logger: logger)
        var deliveries = 0
        for try await count in rows.decode(Int64.self) { deliveries = Int(count) }
        return deliveries
    }
}
