// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO

/// Writes raw events into the events queue.
public struct EventStore: Sendable {
    /// The most rows one INSERT takes (10 bind parameters a row, far below PostgreSQL's 65,535).
    public static let maximumBatchSize = 512

    let client: PostgresClient
    let logger: Logger
    /// Proves each row it stores (`EVENT_SIGNING_KEY`); `nil` stores none.
    let proof: EventProof?

    public init(client: PostgresClient, proof: EventProof? = nil, logger: Logger) {
        self.client = client
        self.proof = proof
        self.logger = logger
    }

    /// Stores events in one statement and one transaction — one commit — and wakes the workers once.
    ///
    /// Idempotent on `(source, external_id)`: a key already stored, or repeated within `records`,
    /// is reported as ``StoreResult/duplicate`` and makes no second row.
    ///
    /// - Returns: one result per record, in the order of `records`.
    /// - Throws: the database error; then nothing of this call was committed.
    public func insert(_ records: [EventRecord]) async throws -> [StoreResult] {
        precondition(records.count <= Self.maximumBatchSize, "split batches at EventStore.maximumBatchSize")
        guard !records.isEmpty else { return [] }
        var firstIndex: [EventKey: Int] = [:]
        var unique: [EventRecord] = []
        for var record in records where firstIndex[record.key] == nil {
            firstIndex[record.key] = unique.count
            record.proof = record.proof ?? proof?.proof(of: record)
            unique.append(record)
        }
        // An explicit COMMIT, not the statement's implicit transaction: PostgreSQL sends an
        // implicit transaction's rows and CommandComplete before it commits (at Sync), and a
        // backend killed in between (`pg_ctl restart -m immediate`) flushes them to the client on
        // its way out, so the INSERT looked done though it never committed. The COMMIT's own
        // completion is sent only after the commit is durable.
        let stored = try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(try Self.insertQuery(unique), logger: logger)
            var stored = Set<EventKey>()
            for try await (source, externalID) in rows.decode((String, String).self) {
                if let source = EventSource(rawValue: source) {
                    stored.insert(EventKey(source: source, externalID: externalID))
                }
            }
            return stored
        }
        var reported = Set<EventKey>()
        return records.map { record in
            // The first copy of a newly stored key is `stored`; every other copy is a duplicate.
            guard stored.contains(record.key), reported.insert(record.key).inserted else { return .duplicate }
            return .stored
        }
    }

    /// `WITH stored AS (INSERT … ON CONFLICT DO NOTHING RETURNING …)` plus one `pg_notify` when
    /// anything was stored, so the rows and the notification commit together.
    static func insertQuery(_ records: [EventRecord]) throws -> PostgresQuery {
        var bindings = PostgresBindings(capacity: records.count * 10 + 1)
        // The rows go through a VALUES list so that keys of pruned events (`event_keys`) are left
        // out too: a re-sent or recovered old event stays a duplicate after its row is gone.
        var sql = """
            WITH incoming (source, external_id, type, subtype, environment, event_time, ordering_key, payload, origin, proof) AS (
                VALUES
            """
        for (index, record) in records.enumerated() {
            let base = index * 10
            sql += index == 0 ? " " : ", "
            sql += "($\(base + 1)::text, $\(base + 2)::text, $\(base + 3)::text, $\(base + 4)::text, $\(base + 5)::text, "
                + "$\(base + 6)::timestamptz, $\(base + 7)::text, $\(base + 8)::bytea, $\(base + 9)::text, $\(base + 10)::bytea)"
            bindings.append(record.source.rawValue)
            bindings.append(record.externalID)
            bindings.append(record.type)
            bindings.append(record.subtype)
            bindings.append(record.environment)
            bindings.append(record.eventTime)
            bindings.append(record.orderingKey)
            bindings.append(record.payload)
            bindings.append(record.origin.rawValue)
            bindings.append(record.proof.map { ByteBuffer(bytes: $0) })
        }
        let channelIndex = records.count * 10 + 1
        bindings.append(QueueName.events.notificationChannel)
        sql += """

            ), stored AS (
                INSERT INTO events (source, external_id, type, subtype, environment, event_time, ordering_key, payload, origin, proof)
                SELECT i.* FROM incoming i
                WHERE NOT EXISTS (SELECT 1 FROM event_keys k WHERE k.source = i.source AND k.external_id = i.external_id)
                ON CONFLICT (source, external_id) DO NOTHING
                RETURNING source, external_id
            ), woken AS (
                SELECT pg_notify($\(channelIndex), '') WHERE EXISTS (SELECT 1 FROM stored)
            )
            SELECT source, external_id FROM stored, (SELECT count(*) FROM woken) AS notified
            """
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }
}
