// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// Reads the timeline of a set of entitlements: every stored event applied to them (or waiting,
/// or dead, before it could be), the changes the clock made, and what each sent out.
struct TimelineReader: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// The newest `limit` entries for `entityKeys`, newest first.
    func timeline(entityKeys keys: [String], limit: Int) async throws -> [TimelineEntry] {
        var entries: [Int64: TimelineEntry] = [:]
        // Events the worker finished with for these entities, and the decision it recorded.
        let applied = try await client.query(
            """
            SELECT e.id, e.source, e.type, e.subtype, e.origin, COALESCE(e.event_time, e.received_at), e.received_at,
                   a.entity_key, a.outcome, a.detail
            FROM applied_events a JOIN events e ON e.id = a.event_id
            WHERE a.entity_key = ANY(\(keys))
            ORDER BY COALESCE(e.event_time, e.received_at) DESC, e.id DESC LIMIT \(limit)
            """, logger: logger)
        for try await (id, source, type, subtype, origin, time, receivedAt, entity, outcome, detail)
            in applied.decode((Int64, String, String, String?, String, Date, Date, String?, String, String?).self) {
            entries[id] = TimelineEntry(
                event: QueueItemID(queue: .events, id: id).description, time: time, receivedAt: receivedAt, source: source,
                type: type, subtype: subtype, origin: Self.origin(source: source, origin: origin), entity: entity,
                decision: outcome, detail: detail, outgoing: [])
        }
        // Events about them not applied (yet): waiting, running, or dead — often the answer to
        // "why has this user no access?". Matched by the provider ids linked to the entities.
        // One OR arm per state lets the planner reach the few unfinished rows through the
        // queue's own partial index for each state (events_runnable, events_leased, events_dead).
        let tails = keys.compactMap { $0.split(separator: ":").last.map(String.init) }
        let waiting = try await client.query(
            """
            SELECT e.id, e.source, e.type, e.subtype, e.origin, COALESCE(e.event_time, e.received_at), e.received_at,
                   e.state, e.last_error
            FROM events e
            WHERE (e.state = 'pending' OR e.state = 'running' OR e.state = 'dead')
              AND (e.ordering_key = ANY(\(tails))
                   OR e.ordering_key IN (SELECT external_id FROM provider_links WHERE entitlement_key = ANY(\(keys))))
            ORDER BY e.id DESC LIMIT \(limit)
            """, logger: logger)
        for try await (id, source, type, subtype, origin, time, receivedAt, state, lastError)
            in waiting.decode((Int64, String, String, String?, String, Date, Date, String, String?).self) where entries[id] == nil {
            entries[id] = TimelineEntry(
                event: QueueItemID(queue: .events, id: id).description, time: time, receivedAt: receivedAt, source: source,
                type: type, subtype: subtype, origin: Self.origin(source: source, origin: origin), entity: nil,
                decision: state, detail: lastError, outgoing: [])
        }
        // A refund request's answer to Apple (docs/credits.md): what was sent, or why not.
        for try await (eventID, state, body, error) in try await client.query(
            "SELECT event_id, state, body::text, last_error FROM consumption_requests WHERE event_id = ANY(\(Array(entries.keys)))",
            logger: logger
        ).decode((Int64, String, String?, String?).self) {
            let before = entries[eventID]?.detail
            entries[eventID]?.detail = [before, Self.consumptionAnswer(state: state, body: body, error: error)].compactMap { $0 }.joined(separator: "; ")
        }
        var clock: [TimelineEntry] = []
        let outgoing = try await outgoingEvents(entityKeys: keys, limit: limit * 4)
        for event in outgoing {
            let summary = TimelineEntry.OutgoingSummary(
                id: event.messageID, type: event.type, sequence: event.sequence, deliveries: event.deliveries)
            if let cause = event.causeEventID, entries[cause] != nil {
                entries[cause]?.outgoing.append(summary)
            } else if event.causeEventID == nil {
                clock.append(TimelineEntry(
                    event: nil, time: event.createdAt, receivedAt: nil, source: "clock", type: event.type, subtype: nil,
                    origin: "clock", entity: event.entityKey, decision: "applied",
                    detail: "the period ran out with no ending event", outgoing: [summary]))
            }
        }
        let all = Array(entries.values) + clock
        return Array(all.sorted { ($0.time, $0.event ?? "") > ($1.time, $1.event ?? "") }.prefix(limit))
    }

    /// A consumption request's state in words: the body Apple took, or what became of it.
    static func consumptionAnswer(state: String, body: String?, error: String?) -> String {
        switch state {
        case "sent": "consumption information sent to Apple: \(body ?? "")"
        case "pending": "consumption information " + (error.map { "not sent yet (\($0))" } ?? "to be sent, when CONSUMPTION_RESPONSE is on")
        default: "consumption information \(state): \(error ?? "")"
        }
    }

    /// How the console names how an event arrived: a StoreKit row is an app's `sync`.
    static func origin(source: String, origin: String) -> String {
        source == EventSource.storekit.rawValue && origin == "webhook" ? "sync" : origin
    }

    private struct Outgoing {
        var id: Int64
        var messageID: String
        var type: String
        var sequence: Int64
        var causeEventID: Int64?
        var entityKey: String
        var createdAt: Date
        var deliveries: [TimelineEntry.DeliverySummary] = []
    }

    /// The outgoing events of these entities, oldest first, each with its deliveries.
    private func outgoingEvents(entityKeys keys: [String], limit: Int) async throws -> [Outgoing] {
        var events: [Outgoing] = []
        let rows = try await client.query(
            """
            SELECT id, message_id, type, sequence, cause_event_id, entity_key, created_at FROM outgoing_events
            WHERE entity_key = ANY(\(keys)) ORDER BY id DESC LIMIT \(limit)
            """, logger: logger)
        for try await (id, messageID, type, sequence, cause, entity, created)
            in rows.decode((Int64, String, String, Int64, Int64?, String, Date).self) {
            events.append(Outgoing(id: id, messageID: messageID, type: type, sequence: sequence, causeEventID: cause, entityKey: entity, createdAt: created))
        }
        events.reverse()
        guard !events.isEmpty else { return [] }
        var deliveries: [Int64: [TimelineEntry.DeliverySummary]] = [:]
        let rows2 = try await client.query(
            """
            SELECT outgoing_event_id, endpoint_id, state, attempts, last_error FROM deliveries
            WHERE outgoing_event_id = ANY(\(events.map(\.id))) ORDER BY endpoint_id
            """, logger: logger)
        for try await (outgoingID, endpoint, state, attempts, lastError) in rows2.decode((Int64, Int64?, String, Int32, String?).self) {
            deliveries[outgoingID, default: []].append(TimelineEntry.DeliverySummary(
                endpoint: endpoint.map(Endpoint.name) ?? "forward", state: state, attempts: Int(attempts), lastError: lastError))
        }
        for index in events.indices { events[index].deliveries = deliveries[events[index].id] ?? [] }
        return events
    }
}
