// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared

/// Stores recovered events through the webhooks' own store: the same `(source, external_id)` key,
/// so an event recovered and also delivered by webhook is one row, applied once.
struct RecoveredEventStore: Sendable {
    let client: PostgresClient
    /// `EVENT_SIGNING_KEY`: what the worker stores carries the same proof as what ingest stores.
    var proof: EventProof?
    let logger: Logger

    /// Stores `records` (or, with `dryRun`, only counts what would be stored) into `report`.
    func store(_ records: [EventRecord], dryRun: Bool, into report: inout RecoveryReport) async throws {
        guard !records.isEmpty else { return }
        if dryRun {
            let known = try await existing(records.map(\.key))
            let new = Set(records.map(\.key)).subtracting(known).count
            report.stored += new
            report.alreadyStored += records.count - new
            return
        }
        var start = records.startIndex
        while start < records.endIndex {
            let end = min(start + EventStore.maximumBatchSize, records.endIndex)
            let results = try await EventStore(client: client, proof: proof, logger: logger).insert(Array(records[start..<end]))
            report.stored += results.filter { $0 == .stored }.count
            report.alreadyStored += results.filter { $0 == .duplicate }.count
            start = end
        }
    }

    /// Those of `keys` already in the queue (or once there).
    func existing(_ keys: [EventKey]) async throws -> Set<EventKey> {
        var known = Set<EventKey>()
        for source in Set(keys.map(\.source)) {
            let ids = keys.filter { $0.source == source }.map(\.externalID)
            for try await id in try await client.query(
                """
                SELECT external_id FROM events WHERE source = \(source.rawValue) AND external_id = ANY(\(ids))
                UNION SELECT external_id FROM event_keys WHERE source = \(source.rawValue) AND external_id = ANY(\(ids))
                """, logger: logger
            ).decode(String.self) {
                known.insert(EventKey(source: source, externalID: id))
            }
        }
        return known
    }
}
