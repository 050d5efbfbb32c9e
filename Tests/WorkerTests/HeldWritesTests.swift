// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport
@testable import Worker

/// A batch's records and announcements held back and sent in one statement
/// (`sluice_write_applied_batch`): the same rows, in the same order, as one call each.
@Suite(.timeLimit(.minutes(3)))
struct HeldWritesTests {
    /// What a statement after a held write does, and what the database holds once everything is
    /// sent: each reads or writes what the held write touches, so it must send it first.
    enum FollowingStatement: String, CaseIterable, CustomTestStringConvertible {
        /// A link lookup not loaded ahead finds the held link.
        case linkLookup
        /// A newer save of the same link wins over the held, older one.
        case linkSave
        /// A registration moves the held link to the registered user.
        case reassignment
        /// A Connect deauthorization removes the held link of its account.
        case accountRemoval
        /// A second record of the event keeps the first, the held one.
        case record

        var testDescription: String { rawValue }
    }

    @Test(arguments: FollowingStatement.allCases)
    func aStatementAfterHeldWritesSeesThem(_ statement: FollowingStatement) async throws {
        try await TestDatabase.with { db in
            try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let store = StateStore(connection: connection, logger: TestDatabase.logger)
                let link = ProviderLink(
                    .stripePaymentIntent, "pi_held", userID: "user_held", entitlementKey: "stripe:production:pi_held", account: "acct_held")
                let call = try #require(OutgoingEventWriter.call(
                    [], record: .init(eventID: 41, entityKey: link.entitlementKey, outcome: .applied), links: store.linksToSave([link])))
                store.writes.hold(call: call.argument, for: 41)
                #expect(try await db.scalar("SELECT count(*) FROM applied_events") == 0, "held, not sent")
                func text(_ query: PostgresQuery) async throws -> String? {
                    for try await value in try await connection.query(query, logger: TestDatabase.logger).decode(String?.self) { return value }
                    return nil
                }
                switch statement {
                case .linkLookup:
                    #expect(try await store.link(.stripePaymentIntent, "pi_held")?.userID == "user_held")
                case .linkSave:
                    try await store.save([ProviderLink(.stripePaymentIntent, "pi_held", userID: "user_newer")])
                case .reassignment:
                    try await store.reassignTransactionsAndLinks(of: "user_held", to: "user_registered")
                case .accountRemoval:
                    #expect(try await store.removeLinks(ofAccount: "acct_held") == 1)
                case .record:
                    try await store.record(eventID: 41, entityKey: nil, outcome: .stale)
                }
                try await store.flush()
                let user = try await text("SELECT user_id FROM provider_links WHERE external_id = 'pi_held'")
                switch statement {
                case .linkLookup, .record: #expect(user == "user_held")
                case .linkSave: #expect(user == "user_newer")
                case .reassignment: #expect(user == "user_registered")
                case .accountRemoval: #expect(user == nil, "removed, not written again after")
                }
                #expect(try await text("SELECT outcome FROM applied_events WHERE event_id = 41") == "applied")
                #expect(store.writes.deliveries(of: 41) == 0)
            }
        }
    }

    /// A batch with an endpoint: every announcement has its delivery, each entitlement's
    /// announcements are numbered in the order its events were applied, and one by one gives the
    /// same announcements.
    @Test(arguments: [1, 16])
    func aBatchsAnnouncementsAreNumberedInApplyOrderWithTheirDeliveries(size: Int) async throws {
        try await SystemHarness.run { system in
            _ = try await OutgoingEventsTests.addEndpoint(system, url: "http://127.0.0.1:9/never")
            try await BatchApplyTests.traffic(system)
            if size == 1 { try await system.drain() } else { try await system.drainInBatches(size: size) }
            let announced = try await system.db.strings("SELECT type || ' ' || entity_key FROM outgoing_events ORDER BY sequence")
            #expect(announced.filter { $0.hasPrefix("entitlement.") }.count == 10, "\(announced)")
            let count = Int64(announced.count)
            #expect(try await system.db.scalar("SELECT count(*) FROM deliveries WHERE outgoing_event_id IS NOT NULL") == count)
            #expect(try await system.db.scalar("""
                SELECT count(*) FROM outgoing_events o JOIN deliveries d ON d.outgoing_event_id = o.id
                WHERE d.sequence = o.sequence AND d.external_id = o.message_id
                """) == count)
            // Per entitlement: the grant before the renewal (Apple), the grant before the refund (Stripe).
            for index in 0..<4 {
                let key = "apple:sandbox:77\(index)001"
                let types = announced.filter { $0.hasSuffix(" \(key)") && $0.hasPrefix("entitlement.") }.map { $0.split(separator: " ")[0] }
                #expect(types == ["entitlement.granted", "entitlement.renewed"], "\(key): \(types)")
            }
            #expect(try await system.db.scalar("SELECT count(*) FROM applied_events") == 10)
        }
    }
}
