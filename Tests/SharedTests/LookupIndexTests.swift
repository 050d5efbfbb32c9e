// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
import Testing
import TestSupport

/// The lookups by entity of `worker rebuild` and the console's customer timeline each have an
/// index (sql/0020): on tables that grow with every applied event, a sequential scan would read
/// every row. The timeline's unfinished events are reached through the queue's partial index for
/// each state (sql/0001), which needs one OR arm per state (sql/0021). With sequential scans
/// disabled the planner takes an index wherever one fits, so a plan without every expected index
/// means one is missing or does not fit the query's shape.
@Suite(.timeLimit(.minutes(3)))
struct LookupIndexTests {
    static let lookups: [(query: String, indexes: [String])] = [
        ("SELECT event_id FROM applied_events WHERE entity_key = ANY('{apple:sandbox:1}'::text[])", ["applied_events_entity"]),
        ("SELECT event_id FROM applied_events WHERE entity_key = 'apple:sandbox:1'", ["applied_events_entity"]),
        ("SELECT id FROM outgoing_events WHERE entity_key = ANY('{apple:sandbox:1}'::text[]) ORDER BY id DESC LIMIT 50",
         ["outgoing_events_entity"]),
        ("SELECT id FROM deliveries WHERE outgoing_event_id = ANY('{1,2}'::bigint[])", ["deliveries_outgoing_event"]),
        ("SELECT external_id FROM provider_links WHERE entitlement_key = ANY('{apple:sandbox:1}'::text[])", ["provider_links_entitlement"]),
        ("SELECT id FROM events WHERE (state = 'pending' OR state = 'running' OR state = 'dead') AND ordering_key = ANY('{1}'::text[])",
         ["events_runnable", "events_leased", "events_dead"]),
    ]

    @Test(arguments: lookups)
    func aLookupByEntityUsesItsIndexes(query: String, indexes: [String]) async throws {
        try await TestDatabase.with { db in
            try await db.client.withConnection { connection in
                try await connection.query("SET enable_seqscan = off", logger: TestDatabase.logger)
                var plan = ""
                for try await line in try await connection.query("EXPLAIN \(unescaped: query)", logger: TestDatabase.logger)
                    .decode(String.self) {
                    plan += line + "\n"
                }
                for index in indexes {
                    #expect(plan.contains(index), "\(index) missing from the plan:\n\(plan)")
                }
            }
        }
    }

    /// sql/0021: the events index of sql/0020 that only the timeline used is gone from ingest's
    /// hot path, on a database migrated through every file.
    @Test func theTimelinesOwnEventsIndexIsDropped() async throws {
        try await TestDatabase.with { db in
            let rows = try await db.client.query(
                "SELECT count(*)::int FROM pg_indexes WHERE tablename = 'events' AND indexname = 'events_unfinished_ordering'",
                logger: TestDatabase.logger)
            var count = -1
            for try await value in rows.decode(Int.self) { count = value }
            #expect(count == 0)
        }
    }
}
