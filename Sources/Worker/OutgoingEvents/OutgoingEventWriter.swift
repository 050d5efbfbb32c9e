// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import PostgresNIO
import Shared

/// Makes the **call** that writes, inside the caller's transaction, everything applying one event
/// sends out and records (an element of `sluice_write_applied_batch`'s argument, held with the
/// event's state in the store's ``HeldWrites``): the event's provider links, its `applied_events`
/// record, the outgoing events (numbered from `outgoing_event_sequence`, their bodies completed
/// with the number), one delivery per enabled endpoint whose filters take each
/// (`sluice_endpoint_takes`), and the raw notification's deliveries for `raw_apple` endpoints.
/// Folding them into the statement that saves the event's state keeps announcing free of extra
/// round trips.
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

    /// One call of `sluice_write_applied_batch`: what applying one event writes besides its state.
    struct Call: Sendable {
        var events: [OutgoingEvent]
        /// Each event's body after its `sequence` (``OutgoingEvent/renderedTail()``).
        var tails: [String]
        var record: Record?
        var rawNotification: RawNotification?
        /// `sluice_save_links`'s argument (``StateStore/linksToSave(_:)``), if any.
        var links: String?
        /// The currency grants' changes (``CurrencyGrantDecision/argument(_:causeEventID:)``), if any.
        var balanceChanges: String? = nil
    }

    /// - Parameters:
    ///   - events: the events to store; all share `causeEventID`.
    ///   - record: how the applied event is recorded, if one was applied.
    ///   - rawNotification: the notification to forward as it is, if any.
    ///   - links: `sluice_save_links`'s argument (``StateStore/linksToSave(_:)``), if any.
    ///   - balanceChanges: the currency grants' changes, made in the same statement, if any.
    /// - Returns: the call, or `nil` when there is nothing to write.
    static func call(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, links: String? = nil,
        balanceChanges: String? = nil
    ) -> Call? {
        guard !events.isEmpty || record != nil || rawNotification != nil || links != nil || balanceChanges != nil else { return nil }
        let tails = events.map { String(decoding: $0.renderedTail(), as: UTF8.self) }
        return Call(events: events, tails: tails, record: record, rawNotification: rawNotification, links: links, balanceChanges: balanceChanges)
    }

    /// Writes at once what ``call(_:record:rawNotification:links:)`` describes, through the one
    /// path every applied event's writes take (``HeldWrites``): for writers outside an event's
    /// apply (the clock sweep, `worker rebuild`'s announcement).
    ///
    /// - Returns: how many deliveries were made.
    @discardableResult
    func write(
        _ events: [OutgoingEvent], record: Record? = nil, rawNotification: RawNotification? = nil, links: String? = nil,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard let call = Self.call(events, record: record, rawNotification: rawNotification, links: links) else { return 0 }
        let writes = HeldWrites()
        let id = call.causeEventID ?? 0
        writes.hold(call: call.argument, for: id)
        try await writes.send(on: connection, logger: logger)
        return writes.deliveries(of: id)
    }
}

extension OutgoingEventWriter.Call {
    /// The call as one element of `sluice_write_applied_batch`'s argument (``HeldWrites/hold(call:for:)``).
    var argument: String {
        var json = JSONTextWriter()
        CallArguments(self).write(to: &json)
        return json.text
    }

    /// The applied event the outgoing events are about.
    var causeEventID: Int64? { events.first?.causeEventID }
    /// When they happened: stored as `created_at`.
    var occurredAt: Date { events.first?.occurredAt ?? Date() }
}

/// One call's parameters, as `sluice_write_applied_batch` reads them by name: the time in
/// microseconds since 2000-01-01 (PostgreSQL's own count, as a bind parameter sends it: the same
/// instant to the microsecond).
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
    var balance_changes: String?

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
        balance_changes = call.balanceChanges
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
            o.member("links", jsonText: links)
            o.member("balance_changes", jsonText: balance_changes)
        }
    }
}
