// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// `sluice_write_applied_batch` writes each table once for the whole batch: what it stores and
/// answers for many calls must be what it stores and answers for each call sent alone, in order
/// (a lone event's statement) — the same links, records, numbered events, deliveries and raw
/// forwards, and each call's count of deliveries.
@Suite(.timeLimit(.minutes(3)))
struct WriteAppliedBatchTests {
    @Test
    func aBatchWritesWhatItsCallsWriteOneByOne() async throws {
        let calls = try Self.calls()
        let batched = try await Self.written(calls, inOneStatement: true)
        let oneByOne = try await Self.written(calls, inOneStatement: false)
        #expect(batched.counts == [0, 3, 1, 1], "each call's deliveries: none, two events and a raw forward, one event, one raw forward")
        #expect(batched.counts == oneByOne.counts)
        #expect(batched.rows.count == 4, "links, records, outgoing events, deliveries")
        for (table, (rows, expected)) in zip(["links", "records", "outgoing events", "deliveries"], zip(batched.rows, oneByOne.rows)) {
            #expect(rows == expected, "\(table)")
            #expect(!rows.isEmpty, "\(table) written")
        }
    }

    /// A call's events come as parallel arrays (one of message ids, one of types, …) that the
    /// function reads side by side: each stored event has its own fields and its own payload, in
    /// the call's order, whatever the order of the arrays' columns in the function.
    @Test
    func eachEventOfACallIsStoredWithItsOwnFields() async throws {
        // The Apple call's two entitlement events (one without a user), and a Stripe sandbox
        // payment's, whose ordering key (the transaction) is not its entity key (the entitlement):
        // every column differs from one event to the next somewhere.
        let apple = try Self.calls()[1]
        let announcer = ChangeAnnouncer(
            cause: EventCause(provider: "stripe", eventType: "charge.refunded", eventID: "evt_1", origin: .webhook), causeEventID: 1,
            leeway: 0, sandboxAccess: .anybody, writer: OutgoingEventWriter(logger: TestDatabase.logger), now: Date())
        var payment = TransactionState(source: .webCheckout, providerTransactionID: "pi_1", environment: .sandbox, status: .refunded)
        payment.entitlementKey = "stripe:sandbox:sub_1"
        payment.userID = "user_c"
        let refunded = announcer.event(.transactionRefunded, transaction: payment, id: UUID(), previous: nil)
        let call = try #require(OutgoingEventWriter.call(apple.events + [refunded]))
        #expect(call.events.count == 3 && Set(call.events.map(\.userID)).count == 3, "three events, one without a user")
        #expect(Set(call.events.map(\.provider)).count == 2 && Set(call.events.map(\.environment)).count == 2)
        #expect(refunded.orderingKey != refunded.entityKey)
        let stored = try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let writes = HeldWrites()
                writes.hold(call: call.argument, for: 1)
                try await writes.send(on: connection, logger: TestDatabase.logger)
            }
            let tails = String(decoding: try JSONEncoder().encode(call.tails), as: UTF8.self)
            return try await db.strings(
                """
                SELECT concat_ws('|', message_id, type, entity_key, ordering_key, provider, environment, COALESCE(user_id, '(none)'),
                    CASE WHEN convert_from(payload, 'UTF8') = '{"sequence":' || sequence || ',' || (\(tails)::jsonb->>(row_number() OVER (ORDER BY sequence) - 1)::int)
                         THEN 'its own payload' ELSE convert_from(payload, 'UTF8') END)
                FROM outgoing_events ORDER BY sequence
                """)
        }
        let expected = call.events.map { event in
            [event.messageID, event.type.rawValue, event.entityKey, event.orderingKey, event.provider, event.environment.rawValue,
             event.userID ?? "(none)", "its own payload"].joined(separator: "|")
        }
        #expect(stored == expected)
    }

    /// Four events applied in a batch: a record with a link; an Apple event with two announcements,
    /// a later save of that link and its raw notification; a clock-like call with one
    /// announcement and no record; and a raw notification alone.
    static func calls() throws -> [OutgoingEventWriter.Call] {
        let writer = OutgoingEventWriter(logger: TestDatabase.logger)
        let occurredAt = Date(timeIntervalSince1970: 1_790_000_000.123456)
        func announcer(_ eventID: Int64) -> ChangeAnnouncer {
            ChangeAnnouncer(
                cause: EventCause(provider: "apple", eventType: "DID_RENEW", eventID: "n\(eventID)", origin: .webhook), causeEventID: eventID,
                leeway: 0, sandboxAccess: .anybody, writer: writer, now: occurredAt)
        }
        func entitlement(_ key: String, user: String?) -> EntitlementState {
            var state = EntitlementState(entityKey: key, userID: user, productID: "pro", productType: .autoRenewable, source: .storeKit, status: .active)
            state.expiresAt = occurredAt.addingTimeInterval(86_400)
            return state
        }
        let id = UUID(uuidString: "00000000-0000-0000-0000-0000000000e1")!
        let granted = entitlement("apple:production:100", user: "user_a")
        let renewed = entitlement("apple:production:200", user: nil)
        let link = ProviderLink(.appleOriginalTransaction, "100", userID: "user_a", entitlementKey: granted.entityKey)
        // Saved after `link`: its user wins, its account completes it (and in the other order, not).
        let completing = ProviderLink(.appleOriginalTransaction, "100", userID: "user_b", entitlementKey: granted.entityKey, account: "acct_1")
        let other = ProviderLink(.appleOriginalTransaction, "200", userID: nil, entitlementKey: renewed.entityKey)
        /// `sluice_save_links`'s argument, as ``StateStore/linksToSave(_:)`` writes it.
        func linksArgument(_ links: [ProviderLink]) throws -> String {
            let rows = links.map { link in
                ["kind": link.kind.rawValue, "scope": link.scope, "external_id": link.externalID, "user_id": link.userID,
                 "entitlement_key": link.entitlementKey, "transaction_key": link.transactionKey, "account": link.account]
            }
            return String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        }
        return try [
            OutgoingEventWriter.call([], record: .init(eventID: 1, entityKey: granted.entityKey, outcome: .applied), links: linksArgument([link])),
            OutgoingEventWriter.call(
                [announcer(2).event(.entitlementGranted, entitlement: granted, id: id, previous: nil),
                 announcer(2).event(.entitlementRenewed, entitlement: renewed, id: id, previous: renewed)],
                record: .init(eventID: 2, entityKey: renewed.entityKey, outcome: .applied, detail: "two"),
                rawNotification: .init(eventID: 2, environment: .production), links: linksArgument([completing, other])),
            OutgoingEventWriter.call([announcer(3).event(.entitlementRenewed, entitlement: renewed, id: id, previous: renewed)]),
            OutgoingEventWriter.call([], rawNotification: .init(eventID: 4, environment: .production)),
        ].map { try #require($0) }
    }

    struct Written: Sendable {
        var counts: [Int]
        /// Each table's rows as text, without the columns a database numbers itself.
        var rows: [[String]]
    }

    /// The calls written into a fresh database with an endpoint for announcements and one for
    /// raw notifications, in one statement or one call each.
    static func written(_ calls: [OutgoingEventWriter.Call], inOneStatement: Bool) async throws -> Written {
        try await TestDatabase.with { db in
            let endpoints = EndpointStore(client: db.client, logger: TestDatabase.logger)
            _ = try await endpoints.add(url: "http://127.0.0.1:9/announced", changes: .init(allowPrivate: true), secret: Endpoint.newSecret())
            _ = try await endpoints.add(url: "http://127.0.0.1:9/raw", changes: .init(rawApple: true, allowPrivate: true), secret: Endpoint.newSecret())
            try await db.client.query(
                """
                INSERT INTO events (source, external_id, type, environment, ordering_key, payload, state)
                SELECT 'apple', 'n' || n, 'DID_RENEW', 'Production', '100', convert_to('{"n":' || n || '}', 'UTF8'), 'running'
                FROM generate_series(1, 4) AS n
                """, logger: TestDatabase.logger)
            let counts = try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                // Each call held under its own number, sent all at once or each in a statement of its own.
                let writes = HeldWrites()
                for (n, call) in calls.enumerated() {
                    writes.hold(call: call.argument, for: Int64(n))
                    if !inOneStatement { try await writes.send(on: connection, logger: TestDatabase.logger) }
                }
                try await writes.send(on: connection, logger: TestDatabase.logger)
                return calls.indices.map { writes.deliveries(of: Int64($0)) }
            }
            return Written(counts: counts, rows: [
                try await db.strings(
                    "SELECT concat_ws('|', kind, scope, external_id, user_id, entitlement_key, transaction_key, account) FROM provider_links ORDER BY kind, external_id"),
                try await db.strings("SELECT concat_ws('|', event_id, entity_key, outcome, detail) FROM applied_events ORDER BY event_id"),
                try await db.strings(
                    """
                    SELECT concat_ws('|', sequence, message_id, type, entity_key, ordering_key, provider, environment, user_id,
                        cause_event_id, convert_from(payload, 'UTF8'), (extract(epoch FROM created_at) * 1000000)::bigint)
                    FROM outgoing_events ORDER BY sequence
                    """),
                try await db.strings(
                    """
                    SELECT concat_ws('|', d.event_id, d.sequence, d.source, d.type, d.external_id, d.target, convert_from(d.payload, 'UTF8'), e.url,
                        d.ordering_key)
                    FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id ORDER BY d.external_id, e.url
                    """),
            ])
        }
    }
}
