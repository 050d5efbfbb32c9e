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
/// event's `applied_events` record; and first the event's provider links (sql/functions/sluice_write_applied.sql). Folding them
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

    /// An applied App Store Server Notification, sent as stored (`{"signedPayload":…}`, Apple's JWS
    /// unchanged) to the `raw_apple` endpoints of its environment.
    struct RawNotification: Sendable {
        var eventID: Int64
        var environment: PurchaseEnvironment
    }

    /// The arguments of one `sluice_write_applied` call: what applying one event writes.
    struct Call: Sendable {
        var events: [OutgoingEvent]
        /// Each event's body after its `sequence` (``OutgoingEvent/renderedTail()``).
        var tails: [String]
        var record: Record?
        var rawNotification: RawNotification?
        /// `sluice_save_links`'s argument (``StateStore/linksToSave(_:)``), if any.
        var links: String?
    }

    /// - Parameters:
    ///   - events: the events to store; all share `causeEventID`.
    ///   - record: how the applied event is recorded, if one was applied.
    ///   - rawNotification: the notification to forward as it is, if any.
    ///   - links: `sluice_save_links`'s argument (``StateStore/linksToSave(_:)``), if any.
    /// - Returns: the call, or `nil` when there is nothing to write.
    func call(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, links: String? = nil
    ) -> Call? {
        guard !events.isEmpty || record != nil || rawNotification != nil || links != nil else { return nil }
        let tails = events.map { String(decoding: $0.renderedTail(), as: UTF8.self) }
        return Call(events: events, tails: tails, record: record, rawNotification: rawNotification, links: links)
    }

    /// Writes at once what ``call(_:record:rawNotification:links:)`` describes.
    ///
    /// - Returns: how many deliveries were made.
    @discardableResult
    func write(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, links: String? = nil,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard let call = call(events, record: record, rawNotification: rawNotification, links: links) else { return 0 }
        return try await send(call, on: connection)
    }

    /// Sends one call.
    ///
    /// - Returns: how many deliveries were made.
    func send(_ call: Call, on connection: PostgresConnection) async throws -> Int {
        let p = CallArguments(call)  // the parameters, named as the function names them
        // sql/functions/sluice_write_applied.sql: the function keeps its statements' plans per connection.
        let rows = try await connection.query(
            """
            SELECT sluice_write_applied(
                \(p.record_event_id)::bigint, \(p.record_entity_key)::text, \(p.record_outcome)::text, \(p.record_detail)::text,
                \(p.message_ids)::text[], \(p.types)::text[], \(p.entity_keys)::text[], \(p.ordering_keys)::text[],
                \(p.providers)::text[], \(p.environments)::text[], \(p.user_ids)::text[], \(p.tails)::text[],
                \(p.cause_event_id)::bigint, \(call.occurredAt)::timestamptz,
                \(p.raw_event_id)::bigint, \(p.raw_environment)::text, \(p.links)::jsonb)
            """, logger: logger)
        var deliveries = 0
        for try await count in rows.decode(Int64.self) { deliveries = Int(count) }
        return deliveries
    }

    /// Sends held entitlement and transaction saves, then many calls, in one statement
    /// (`sluice_write_batch`; the calls through `sluice_write_applied_batch`; sql/functions/),
    /// each call made as ``send(_:on:)`` would make it, in order.
    ///
    /// - Returns: each call's count of deliveries, in order.
    func send(_ states: [HeldStateWrite], calls: [Call], on connection: PostgresConnection) async throws -> [Int] {
        guard !states.isEmpty || !calls.isEmpty else { return [] }
        var argument = JSONTextWriter()
        argument.array { array in for call in calls { CallArguments(call).write(to: &array) } }
        let rows = try await connection.query(
            "SELECT sluice_write_batch(\(HeldStateWrite.argument(states))::jsonb, \(argument.text)::jsonb)", logger: logger)
        var counts: [Int] = []
        for try await row in rows.decode([Int64].self) { counts = row.map(Int.init) }
        guard counts.count == calls.count else {
            throw StateStoreError(reason: "sluice_write_batch answered \(counts.count) counts for \(calls.count) calls")
        }
        return counts
    }
}

extension OutgoingEventWriter.Call {
    /// The applied event the outgoing events are about.
    var causeEventID: Int64? { events.first?.causeEventID }
    /// When they happened: stored as `created_at`.
    var occurredAt: Date { events.first?.occurredAt ?? Date() }
}

/// One call's parameters, as `sluice_write_applied` takes them (``OutgoingEventWriter/send(_:on:)-(Call,_)``)
/// and as `sluice_write_applied_batch` reads them by name; there the time is in microseconds since
/// 2000-01-01 (PostgreSQL's own count, as a bind parameter sends it: the same instant to the microsecond).
private struct CallArguments {
    var record_event_id: Int64?
    var record_entity_key: String?
    var record_outcome: String?
    var record_detail: String?
    var message_ids: [String]
    var types: [String]
    var entity_keys: [String]
    var ordering_keys: [String]
    var providers: [String]
    var environments: [String]
    var user_ids: [String]
    var tails: [String]
    var cause_event_id: Int64?
    var occurred_at_us: Int64
    var raw_event_id: Int64?
    var raw_environment: String?
    var links: String?

    init(_ call: OutgoingEventWriter.Call) {
        record_event_id = call.record?.eventID
        record_entity_key = call.record?.entityKey
        record_outcome = call.record?.outcome.rawValue
        record_detail = call.record?.detail
        message_ids = call.events.map(\.messageID)
        types = call.events.map(\.type.rawValue)
        entity_keys = call.events.map(\.entityKey)
        ordering_keys = call.events.map(\.orderingKey)
        providers = call.events.map(\.provider)
        environments = call.events.map(\.environment.rawValue)
        user_ids = call.events.map { $0.userID ?? "" }
        tails = call.tails
        cause_event_id = call.causeEventID
        occurred_at_us = call.occurredAt.postgresMicroseconds
        raw_event_id = call.rawNotification?.eventID
        raw_environment = call.rawNotification?.environment.rawValue
        links = call.links
    }

    /// The call as one element of `sluice_write_applied_batch`'s argument, members named as above.
    func write(to json: inout JSONTextWriter) {
        json.object { o in
            o.member("record_event_id", record_event_id)
            o.member("record_entity_key", record_entity_key)
            o.member("record_outcome", record_outcome)
            o.member("record_detail", record_detail)
            o.member("message_ids", message_ids)
            o.member("types", types)
            o.member("entity_keys", entity_keys)
            o.member("ordering_keys", ordering_keys)
            o.member("providers", providers)
            o.member("environments", environments)
            o.member("user_ids", user_ids)
            o.member("tails", tails)
            o.member("cause_event_id", cause_event_id)
            o.member("occurred_at_us", occurred_at_us)
            o.member("raw_event_id", raw_event_id)
            o.member("raw_environment", raw_environment)
            o.member("links", links)
        }
    }
}
