// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Shared

/// Recomputes entitlements and their transactions from Sluice's own log of raw events — for after
/// a handler bug is fixed, when the state it wrote is wrong and its events are `done`.
///
/// One transaction per entity: lock it, delete its entitlement, transactions (with their history)
/// and the records of its events, apply those events again in provider order with the current
/// handlers, and compare. Provider links are facts and are kept. A dry run rolls back.
///
/// With `EVENT_SIGNING_KEY` every stored event is checked as the pool checks it
/// (``ProvenRowHandler``): an entity with an event whose proof no key verifies is not rebuilt (its
/// transaction rolls back, nothing changes) — the event is not Sluice's, or its key was rotated
/// out of `EVENT_SIGNING_KEY` while rows it proved are still kept. Where the worker proves rows and
/// the key is not given, the rebuild refuses to start.
///
/// What the rebuild changed in the entitlement is announced once, at the end, as one outgoing
/// event with cause `rebuild` (the steps in between are not: receivers already saw them).
struct EntityRebuilder: Sendable {
    /// What rebuilding one entity changed.
    struct Change: Sendable, Encodable {
        var entityKey: String
        var events: Int
        /// `field: before → after` for every field that differs; empty when nothing changed.
        var differences: [String]

        enum CodingKeys: String, CodingKey { case entityKey = "entity", events, differences }

        var text: String {
            "\(entityKey) (\(events) events): " + (differences.isEmpty ? "unchanged" : differences.joined(separator: "; "))
        }
    }

    let client: PostgresClient
    let handlers: [String: any EventApplier]
    /// `EVENT_SIGNING_KEY`: only rows with a valid proof are applied again.
    let proof: EventProof?
    /// `ENTITLEMENT_LEEWAY_SECONDS`, for `is_active` in the announcement.
    var leeway: TimeInterval = 3_600
    /// `SANDBOX_ACCESS`, for `is_active` in the announcement.
    var sandboxAccess: SandboxAccess = .anybody
    let logger: Logger

    /// The entities whose events arrived since `since`.
    func entities(since: Date) async throws -> [String] {
        try await strings(client.query(
            """
            SELECT DISTINCT a.entity_key FROM applied_events a JOIN events e ON e.id = a.event_id
            WHERE e.received_at >= \(since) AND a.entity_key IS NOT NULL ORDER BY 1
            """, logger: logger))
    }

    /// The entities of a user. A subscription item's companion entitlement (`<key>#<product>`) is
    /// rebuilt with its subscription, whose events re-save it; it has no events of its own, so
    /// rebuilding it alone would only delete it.
    func entities(user: String) async throws -> [String] {
        let keys = try await strings(client.query(
            "SELECT entity_key FROM entitlements WHERE user_id = \(user) ORDER BY entity_key", logger: logger))
        return Array(Set(keys.map(Self.rebuiltKey(of:)))).sorted()
    }

    /// The entity whose events rebuild `key`: a companion's subscription, else `key` itself.
    static func rebuiltKey(of key: String) -> String {
        guard let separator = key.firstIndex(of: Character(EntityKey.companionSeparator)) else { return key }
        return String(key[..<separator])
    }

    /// Refuses to rebuild without the key where the worker proves rows (a cutover is recorded):
    /// the rebuild would apply rows the pool refuses.
    func requireProofWhereRowsAreProven() async throws {
        guard proof == nil else { return }
        for try await _ in try await client.query("SELECT 1 FROM event_proof_cutover", logger: logger) {
            throw RebuildRefused()
        }
    }

    /// An entity with stored events whose proof no key verifies: not rebuilt.
    struct UnprovenEvents: Error, CustomStringConvertible {
        var entityKey: String
        var eventIDs: [Int64]
        var description: String {
            "\(entityKey) not rebuilt: stored events \(eventIDs.map(String.init).joined(separator: ", ")) carry no proof that "
                + "EVENT_SIGNING_KEY verifies (not stored by Sluice, or proved with a key since removed: keep old keys in the list "
                + "while rows they proved are kept)"
        }
    }

    struct RebuildRefused: Error, CustomStringConvertible {
        var description: String {
            "EVENT_SIGNING_KEY is not set, but the worker applies only proven rows: rebuild checks proofs as the pool does; set the worker's key"
        }
    }

    func rebuild(_ entityKey: String, dryRun: Bool) async throws -> Change {
        try await requireProofWhereRowsAreProven()
        let key = Self.rebuiltKey(of: entityKey)
        return try await client.withTransaction(dryRun: dryRun, logger: logger) { connection in
            try await rebuild(key, on: connection)
        }
    }

    private func rebuild(_ key: String, on connection: PostgresConnection) async throws -> Change {
        let store = StateStore(connection: connection, logger: logger)
        try await store.lock(key)
        let entitlementBefore = try await store.entitlement(key)
        let before = try await snapshot(key, store: store, on: connection)
        var jobs: [ClaimedJob] = []
        var unproven: [Int64] = []
        for try await (id, source, payload, type, externalID, origin, rowProof) in try await connection.query(
            """
            SELECT e.id, e.source, e.payload, e.type, e.external_id, e.origin, e.proof::text
            FROM applied_events a JOIN events e ON e.id = a.event_id
            WHERE a.entity_key = \(key) ORDER BY e.event_time NULLS FIRST, e.id
            """, logger: logger
        ).decode((Int64, String, ByteBuffer, String, String, String, String?).self) {
            // The same columns a dequeued job carries: handlers dispatch on them.
            var attributes: [ClaimedJob.EventColumn: String] = [.type: type, .externalID: externalID, .origin: origin]
            attributes[.proof] = rowProof
            let job = ClaimedJob(id: id, queue: .events, kind: source, attempt: 1, owner: "rebuild", payload: payload, attributes: Dictionary(uniqueKeysWithValues: attributes.map { ($0.key.rawValue, $0.value) }))
            if proof?.refusal(of: job) != nil {
                unproven.append(id)
            } else {
                jobs.append(job)
            }
        }
        guard unproven.isEmpty else {
            logger.warning("rebuild refused: stored events without a valid proof", metadata: ["entity": "\(key)", "events": "\(unproven)"])
            throw UnprovenEvents(entityKey: key, eventIDs: unproven)
        }
        let identity = try await entitlementIdentity(key, on: connection)
        try await connection.query(
            """
            DELETE FROM transaction_status_history WHERE transaction_id IN (SELECT id FROM transactions WHERE entitlement_key = \(key))
            """, logger: logger)
        try await connection.query("DELETE FROM transactions WHERE entitlement_key = \(key)", logger: logger)
        try await connection.query("DELETE FROM entitlements WHERE entity_key = \(key)", logger: logger)
        try await connection.query("DELETE FROM applied_events WHERE entity_key = \(key)", logger: logger)
        for job in jobs {
            guard let handler = handlers[job.kind] else { continue }
            do {
                try await handler.apply(job, on: connection)
            } catch let unlinked as Unlinked {
                // In provider order the linking event comes first; one that still cannot be linked is recorded.
                try await store.record(eventID: job.id, entityKey: key, outcome: .recorded, detail: "rebuild: \(unlinked)")
            }
        }
        if let identity {
            // The same entitlement, recomputed: it keeps the id clients and receivers know it by,
            // and its place in the read API's order (created_at, id).
            try await connection.query(
                "UPDATE entitlements SET id = \(identity.id), created_at = \(identity.createdAt) WHERE entity_key = \(key)",
                logger: logger)
        }
        let after = try await snapshot(key, store: store, on: connection)
        try await announce(key, before: entitlementBefore, store: store, on: connection)
        return Change(entityKey: key, events: jobs.count, differences: Self.differences(before, after))
    }

    /// The id and creation time of the entitlement stored under `key`, if any.
    private func entitlementIdentity(_ key: String, on connection: PostgresConnection) async throws -> (id: UUID, createdAt: Date)? {
        for try await (id, createdAt) in try await connection.query(
            "SELECT id, created_at FROM entitlements WHERE entity_key = \(key)", logger: logger
        ).decode((UUID, Date).self) {
            return (id, createdAt)
        }
        return nil
    }

    /// Writes the event that says what the rebuild changed in the entitlement, if anything visible.
    private func announce(_ key: String, before: EntitlementState?, store: StateStore, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            "SELECT id AS row_id, \(unescaped: EntitlementColumns.list) FROM entitlements WHERE entity_key = \(key)", logger: logger)
        var found: (UUID, EntitlementState)?
        for try await row in rows { found = (try row.makeRandomAccess()["row_id"].decode(UUID.self), try EntitlementColumns.decode(row)) }
        if let (id, after) = found {
            let announcer = ChangeAnnouncer(
                cause: EventCause(provider: EventCause.provider(of: after.source), origin: .rebuild), causeEventID: nil, leeway: leeway,
                sandboxAccess: sandboxAccess, writer: OutgoingEventWriter(logger: logger),
                grants: AccessLevels.grants(of: try await CatalogStore(client: client, logger: logger).all()))
            guard let type = EntitlementChange.type(before: before, after: after, now: announcer.now, leeway: leeway) else { return }
            try await announcer.writer.write([announcer.event(type, entitlement: after, id: id, previous: before)], on: connection)
        }
    }

    /// The entitlement and its transactions, as comparable text.
    private func snapshot(_ key: String, store: StateStore, on connection: PostgresConnection) async throws -> [String: String] {
        var fields: [String: String] = [:]
        if let e = try await store.entitlement(key) {
            for (name, value) in Mirror(reflecting: e).children {
                guard let name, name != "lastEventTime", name != "renewalInfoSignedAt" else { continue }
                fields[name] = Self.describe(value)
            }
        }
        for try await (id, status, refunded, quantityRefunded) in try await connection.query(
            "SELECT provider_transaction_id, status, amount_refunded, quantity_refunded FROM transactions WHERE entitlement_key = \(key)",
            logger: logger
        ).decode((String, String, Int64?, Int32?).self) {
            fields["transaction \(id)"] = status + (refunded.map { " (refunded \($0))" } ?? "")
                + (quantityRefunded.map { " (\($0) refunded of several)" } ?? "")
        }
        return fields
    }

    static func differences(_ before: [String: String], _ after: [String: String]) -> [String] {
        Set(before.keys).union(after.keys).sorted().compactMap { name in
            let old = before[name] ?? "none"
            let new = after[name] ?? "none"
            return old == new ? nil : "\(name): \(old) → \(new)"
        }
    }

    private static func describe(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "null" }
            return describe(wrapped)
        }
        if let date = value as? Date { return date.formatted(.iso8601) }
        if let raw = value as? any RawRepresentable { return "\(raw.rawValue)" }
        return "\(value)"
    }

    private func strings(_ rows: PostgresRowSequence) async throws -> [String] {
        var result: [String] = []
        for try await value in rows.decode(String.self) { result.append(value) }
        return result
    }
}

/// A handler that can apply an event inside a transaction it is given.
protocol EventApplier: Sendable {
    func apply(_ job: ClaimedJob, on connection: PostgresConnection) async throws
}

extension AppleEventHandler: EventApplier {}
extension StripeEventHandler: EventApplier {}
extension PlayPurchaseHandler: EventApplier {}
