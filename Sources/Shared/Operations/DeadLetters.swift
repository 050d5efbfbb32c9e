// SPDX-License-Identifier: Apache-2.0
import Foundation
public import Logging
public import PostgresNIO

/// The dead-letter operations of `worker dlq`, over every queue table.
///
/// Dead rows are never deleted here: a replay puts them back to `pending` with their attempts
/// reset (their history stays in `queue_attempts`), a drain marks them `discarded`.
public struct DeadLetters: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    // MARK: Listing

    /// Dead items matching `filter`, the most recently dead first.
    public func list(_ filter: DeadLetterFilter, limit: Int) async throws -> [DeadLetter] {
        var items: [DeadLetter] = []
        for queue in filter.queues {
            let rows = try await client.query(
                """
                SELECT id, source, type, external_id, attempts, last_error, finished_at FROM \(unescaped: queue.rawValue)
                WHERE state = 'dead' AND \(filter: filter)
                ORDER BY finished_at DESC, id DESC LIMIT \(limit)
                """, logger: logger)
            for try await (id, source, type, externalID, attempts, lastError, failedAt)
                in rows.decode((Int64, String, String, String, Int32, String?, Date?).self) {
                items.append(DeadLetter(
                    id: QueueItemID(queue: queue, id: id).description, queue: queue.rawValue, source: source, type: type,
                    externalID: externalID, attempts: Int(attempts), lastError: lastError, failedAt: failedAt))
            }
        }
        items.sort { ($0.failedAt ?? .distantPast, $0.id) > ($1.failedAt ?? .distantPast, $1.id) }
        return Array(items.prefix(limit))
    }

    /// One row of a queue, in whatever state, with its payload and attempt history; `nil` when there is none.
    public func detail(_ item: QueueItemID) async throws -> QueueItemDetail? {
        try await details(of: [item.id], in: item.queue).first?.detail
    }

    /// Resolves what an operator typed: `events/42`, or a bare `42` when only one queue has that id.
    ///
    /// - Throws: ``CommandFailure`` naming the id when no queue has it or more than one does.
    public func resolve(_ text: String) async throws -> QueueItemID {
        if let item = QueueItemID(text) { return item }
        guard let id = Int64(text), id > 0 else {
            throw CommandFailure("\(text) is not an id; dlq list prints ids like events/42")
        }
        var found: [QueueItemID] = []
        for queue in QueueName.all where try await exists(id, in: queue) {
            found.append(QueueItemID(queue: queue, id: id))
        }
        guard found.count == 1 else {
            throw CommandFailure(found.isEmpty
                ? "no queue item \(id)"
                : "\(id) is ambiguous: name one of \(found.map(\.description).joined(separator: ", "))")
        }
        return found[0]
    }

    /// Resolves every id an operator typed.
    ///
    /// - Throws: ``CommandFailure`` naming every id that names no item ("nothing was `verb`").
    public func resolve(_ texts: [String], verb: String) async throws -> [QueueItemID] {
        var items: [QueueItemID] = []
        var unknown: [String] = []
        for text in texts {
            do { items.append(try await resolve(text)) } catch { unknown.append(text) }
        }
        guard unknown.isEmpty else {
            throw CommandFailure("unknown ids: \(unknown.joined(separator: ", ")); nothing was \(verb)")
        }
        return items
    }

    // MARK: Replaying

    /// What a replay did or, with `dryRun`, would do.
    public struct ReplayResult: Sendable {
        /// The dead items put back in the queue (or that would be).
        public var replayed: [QueueItemID]
        /// Named items that were not dead (already replayed, done, discarded) and were left alone.
        public var notDead: [(item: QueueItemID, state: String)]
    }

    /// Puts the named dead items back in their queues, attempts reset.
    ///
    /// Replaying an item that is no longer dead changes nothing, so a replay may safely be repeated.
    /// - Throws: ``CommandFailure`` naming every id that does not exist; then nothing is replayed.
    public func replay(_ items: [QueueItemID], dryRun: Bool) async throws -> ReplayResult {
        let states = try await states(of: items, verb: "replayed")
        let dead = items.filter { states[$0] == "dead" }
        let notDead = items.filter { states[$0] != "dead" }.map { (item: $0, state: states[$0] ?? "") }
        guard !dryRun else { return ReplayResult(replayed: dead, notDead: notDead) }
        var replayed: [QueueItemID] = []
        for queue in QueueName.all {
            let ids = dead.filter { $0.queue == queue }.map(\.id)
            guard !ids.isEmpty else { continue }
            replayed += try await requeue(in: queue, ids: ids, filter: DeadLetterFilter())
        }
        return ReplayResult(replayed: replayed, notDead: notDead)
    }

    /// Puts every dead item matching `filter` back in its queue, attempts reset.
    public func replayAll(_ filter: DeadLetterFilter, dryRun: Bool) async throws -> ReplayResult {
        var replayed: [QueueItemID] = []
        for queue in filter.queues {
            if dryRun {
                let rows = try await client.query(
                    "SELECT id FROM \(unescaped: queue.rawValue) WHERE state = 'dead' AND \(filter: filter) ORDER BY id",
                    logger: logger)
                for try await id in rows.decode(Int64.self) { replayed.append(QueueItemID(queue: queue, id: id)) }
            } else {
                replayed += try await requeue(in: queue, ids: nil, filter: filter)
            }
        }
        return ReplayResult(replayed: replayed, notDead: [])
    }

    /// Dead rows of `queue` with one of `ids` (all when `nil`) that match `filter` back to `pending`.
    private func requeue(in queue: QueueName, ids: [Int64]?, filter: DeadLetterFilter) async throws -> [QueueItemID] {
        let rows = try await client.query(
            """
            UPDATE \(unescaped: queue.rawValue) SET state = 'pending', attempts = 0, run_at = now(),
                locked_by = NULL, locked_until = NULL, last_error = NULL, finished_at = NULL, updated_at = now()
            WHERE state = 'dead' AND (\(ids)::bigint[] IS NULL OR id = ANY(\(ids))) AND \(filter: filter)
            RETURNING id
            """, logger: logger)
        var replayed: [QueueItemID] = []
        for try await id in rows.decode(Int64.self) {
            replayed.append(QueueItemID(queue: queue, id: id))
        }
        if !replayed.isEmpty {
            try await client.query("SELECT pg_notify(\(queue.notificationChannel), '')", logger: logger)
        }
        return replayed.sorted()
    }

    // MARK: Discarding

    /// Marks the named items `discarded` if they are dead: kept stored (with their history), never
    /// applied. Items in any other state are left alone.
    ///
    /// - Returns: the items that were discarded.
    /// - Throws: ``CommandFailure`` naming every id that does not exist; then nothing is discarded.
    public func discard(_ items: [QueueItemID]) async throws -> [QueueItemID] {
        _ = try await states(of: items, verb: "discarded")
        var discarded: [QueueItemID] = []
        for queue in QueueName.all {
            let ids = items.filter { $0.queue == queue }.map(\.id)
            guard !ids.isEmpty else { continue }
            let rows = try await client.query(
                """
                UPDATE \(unescaped: queue.rawValue) SET state = 'discarded', updated_at = now()
                WHERE id = ANY(\(ids)) AND state = 'dead' RETURNING id
                """, logger: logger)
            for try await id in rows.decode(Int64.self) { discarded.append(QueueItemID(queue: queue, id: id)) }
        }
        return discarded.sorted()
    }

    // MARK: Draining

    /// Hands every dead item matching `filter` to `write` in batches, then marks the batch
    /// `discarded` — only after `write` returned, so an item is never discarded unwritten.
    ///
    /// - Returns: how many items were drained.
    @discardableResult
    public func drain(
        _ filter: DeadLetterFilter, batchSize: Int = 500, write: ([QueueItemDetail]) async throws -> Void
    ) async throws -> Int {
        var drained = 0
        for queue in filter.queues {
            var after: Int64 = 0
            while true {
                var ids: [Int64] = []
                let rows = try await client.query(
                    """
                    SELECT id FROM \(unescaped: queue.rawValue) WHERE state = 'dead' AND id > \(after) AND \(filter: filter)
                    ORDER BY id LIMIT \(batchSize)
                    """, logger: logger)
                for try await id in rows.decode(Int64.self) { ids.append(id) }
                guard let last = ids.last else { break }
                after = last
                let batch = try await details(of: ids, in: queue).filter { $0.detail.state == "dead" }
                try await write(batch.map(\.detail))
                let written = batch.map(\.id)
                let marked = try await client.query(
                    """
                    UPDATE \(unescaped: queue.rawValue) SET state = 'discarded', updated_at = now()
                    WHERE id = ANY(\(written)) AND state = 'dead' RETURNING id
                    """, logger: logger)
                for try await _ in marked { drained += 1 }
            }
        }
        return drained
    }

    // MARK: Reading rows

    /// The state of each named item.
    ///
    /// - Throws: ``CommandFailure`` naming every id that does not exist ("nothing was `verb`").
    private func states(of items: [QueueItemID], verb: String) async throws -> [QueueItemID: String] {
        var states: [QueueItemID: String] = [:]
        for queue in QueueName.all {
            let ids = items.filter { $0.queue == queue }.map(\.id)
            guard !ids.isEmpty else { continue }
            let rows = try await client.query(
                "SELECT id, state FROM \(unescaped: queue.rawValue) WHERE id = ANY(\(ids))", logger: logger)
            for try await (id, state) in rows.decode((Int64, String).self) {
                states[QueueItemID(queue: queue, id: id)] = state
            }
        }
        let unknown = items.filter { states[$0] == nil }
        guard unknown.isEmpty else {
            throw CommandFailure("unknown ids: \(unknown.map(\.description).joined(separator: ", ")); nothing was \(verb)")
        }
        return states
    }

    private func exists(_ id: Int64, in queue: QueueName) async throws -> Bool {
        let rows = try await client.query("SELECT 1 FROM \(unescaped: queue.rawValue) WHERE id = \(id)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// The rows of `queue` with these ids, each with its id, in id order.
    private func details(of ids: [Int64], in queue: QueueName) async throws -> [(id: Int64, detail: QueueItemDetail)] {
        guard !ids.isEmpty else { return [] }
        // The queue's own columns as one JSON object of texts, without the NULL ones.
        let summaryExpression = "jsonb_strip_nulls(jsonb_build_object("
            + queue.summaryColumns.map { "'\($0)', \($0)::text" }.joined(separator: ", ") + "))::text"
        let rows = try await client.query(
            """
            SELECT id, state, source, type, external_id, attempts, last_error, finished_at, received_at, payload,
                   \(unescaped: summaryExpression)
            FROM \(unescaped: queue.rawValue) WHERE id = ANY(\(ids)) ORDER BY id
            """, logger: logger)
        var items: [(id: Int64, detail: QueueItemDetail)] = []
        for try await row in rows {
            let (id, state, source, type, externalID, attempts, lastError, failedAt, receivedAt, payload, summary) = try row.decode(
                (Int64, String, String, String, String, Int32, String?, Date?, Date, ByteBuffer, String).self)
            let bytes = Array(payload.readableBytesView)
            items.append((id, QueueItemDetail(
                item: DeadLetter(
                    id: QueueItemID(queue: queue, id: id).description, queue: queue.rawValue, source: source, type: type,
                    externalID: externalID, attempts: Int(attempts), lastError: lastError, failedAt: failedAt),
                state: state, receivedAt: receivedAt,
                summary: Self.redacted(try JSONDecoder().decode([String: String].self, from: Data(summary.utf8))),
                payload: String(validating: bytes, as: UTF8.self), payloadBase64: Data(bytes).base64EncodedString(),
                history: [])))
        }
        let history = try await attempts(of: ids, in: queue)
        for index in items.indices {
            items[index].detail.history = history[items[index].id] ?? []
        }
        return items
    }

    /// A delivery's target as logs name it: its endpoint (`ep_<id>`), or for a forward made before
    /// endpoints, its URL without credentials or query, which may hold secrets.
    static func redacted(_ summary: [String: String]) -> [String: String] {
        var summary = summary
        if let endpoint = summary["endpoint_id"], !endpoint.isEmpty, endpoint != "null" {
            summary["target"] = "ep_\(endpoint)"
        } else if let target = summary["target"] {
            summary["target"] = URLLabel.of(target)
        }
        return summary
    }

    private func attempts(of ids: [Int64], in queue: QueueName) async throws -> [Int64: [AttemptRecord]] {
        let rows = try await client.query(
            """
            SELECT job_id, attempt, worker, error, http_status, duration_ms, finished_at FROM queue_attempts
            WHERE queue = \(queue.rawValue) AND job_id = ANY(\(ids)) ORDER BY job_id, id
            """, logger: logger)
        var history: [Int64: [AttemptRecord]] = [:]
        for try await (jobID, attempt, worker, error, status, duration, finishedAt)
            in rows.decode((Int64, Int32, String?, String, Int32?, Double?, Date).self) {
            history[jobID, default: []].append(AttemptRecord(
                attempt: Int(attempt), worker: worker, error: error, httpStatus: status.map(Int.init),
                durationMilliseconds: duration, finishedAt: finishedAt))
        }
        return history
    }
}

extension PostgresQuery.StringInterpolation {
    /// Writes `filter` as a SQL condition with bind parameters, for any queue table: `\(filter: filter)`.
    mutating func appendInterpolation(filter: DeadLetterFilter) {
        let source = filter.source?.rawValue
        appendLiteral("(")
        appendInterpolation(source)
        appendLiteral("::text IS NULL OR source = ")
        appendInterpolation(source)
        appendLiteral(") AND (")
        appendInterpolation(filter.type)
        appendLiteral("::text IS NULL OR type = ")
        appendInterpolation(filter.type)
        appendLiteral(") AND (")
        appendInterpolation(filter.since)
        appendLiteral("::timestamptz IS NULL OR finished_at >= ")
        appendInterpolation(filter.since)
        appendLiteral(")")
    }
}
