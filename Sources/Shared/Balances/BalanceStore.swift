// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// Balances and their ledger: every change goes through `sluice_adjust_balances`
/// (sql/functions), which ingest may call and nothing else may write around; reads are plain
/// selects on the primary (a balance read from a lagging replica could allow a spend twice in the
/// app's eyes). Every statement binds its values.
public struct BalanceStore: Sendable {
    /// Runs one statement: on a client's pool, or on the connection of a transaction in progress
    /// (the worker's apply: a grant commits with the purchase it comes from).
    private let run: @Sendable (PostgresQuery, Logger) async throws -> PostgresRowSequence
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.run = { query, logger in try await client.query(query, logger: logger) }
        self.logger = logger
    }

    public init(connection: PostgresConnection, logger: Logger) {
        self.run = { query, logger in try await connection.query(query, logger: logger) }
        self.logger = logger
    }

    /// What became of a change.
    public enum Outcome: Sendable, Equatable {
        /// Made now.
        case applied(BalanceTransaction)
        /// Made before under the same key, for the same request: the first answer again.
        case replayed(BalanceTransaction)
        /// A currency would go below zero: nothing changed. By currency, the balance there was.
        case insufficient([String: Int64])
        /// The key was used before for another request: nothing changed.
        case keyReused
    }

    /// One change, atomic across currencies.
    /// - Parameters:
    ///   - key: an idempotency key; a second change with it for this user is not made.
    ///   - digest: the request's digest, which tells a replay from a reuse of the key.
    ///   - floor: `true` for a take-back (each currency stops at zero, the rest is recorded as
    ///     shortfall); `false` for a spend (refused whole when a balance is too low).
    public func adjust(
        user: String, _ adjustments: BalanceAdjustments, cause: BalanceCause, key: String?, digest: [UInt8]?, floor: Bool = false,
        reason: String? = nil, metadata: [String: String]? = nil, actor: String? = nil
    ) async throws -> Outcome {
        let amounts = try Self.json(adjustments.amounts)
        let metadataText = try metadata.map(Self.json)
        let digestData = digest.map { Data($0) }
        var answer = ""
        for try await text in try await run(
            """
            SELECT sluice_adjust_balances(\(user), \(amounts)::jsonb, \(cause.rawValue), \(key), \(digestData), \(floor), \(reason),
                \(metadataText)::jsonb, \(actor))::text
            """, logger
        ).decode(String.self) { answer = text }
        return try await outcome(of: answer)
    }

    /// What `sluice_adjust_balances` answered, with the ledger row it names.
    private func outcome(of answer: String) async throws -> Outcome {
        let decided = try Self.decided(Data(answer.utf8))
        switch decided.outcome {
        case "applied", "replayed":
            guard let id = decided.id, let row = try await transaction(id) else {
                throw StateStoreError(reason: "sluice_adjust_balances answered \(decided.outcome) without its row")
            }
            return decided.outcome == "applied" ? .applied(row) : .replayed(row)
        case "key_reused": return .keyReused
        case "insufficient": return .insufficient((decided.insufficient ?? [:]).mapValues(\.balance))
        default: throw StateStoreError(reason: "sluice_adjust_balances answered \(decided.outcome)")
        }
    }

    /// Expires what is left of at most `limit` grants whose period ended
    /// (`sluice_expire_balance_lots`), each in the ledger as a row of cause `expiry`.
    /// - Returns: how many grants expired.
    public func expireDue(limit: Int) async throws -> Int {
        var expired = 0
        for try await count in try await run("SELECT sluice_expire_balance_lots(\(Int32(limit)))", logger).decode(Int32.self) {
            expired = Int(count)
        }
        return expired
    }

    /// The function's answer: `{"outcome": …, "id": … | "insufficient": {…}}`.
    struct Decided: Decodable {
        struct Shortage: Decodable { var balance: Int64 }
        var outcome: String
        var id: UUID?
        var insufficient: [String: Shortage]?
    }

    static func decided(_ data: Data) throws -> Decided { try JSONDecoder().decode(Decided.self, from: data) }

    /// Every currency the user has held, with its balance (0 included), by name.
    public func balances(user: String) async throws -> [String: Int64] {
        var balances: [String: Int64] = [:]
        for try await (currency, amount) in try await run(
            "SELECT currency, amount FROM balances WHERE user_id = \(user)", logger
        ).decode((String, Int64).self) {
            balances[currency] = amount
        }
        return balances
    }

    static let columns =
        "id, user_id, adjustments::text, applied::text, balances::text, shortfall::text, cause, reason, metadata::text, actor, created_at, expires_at"

    /// One ledger row.
    public func transaction(_ id: UUID) async throws -> BalanceTransaction? {
        try await Self.rows(run(
            "SELECT \(unescaped: Self.columns) FROM balance_transactions WHERE id = \(id)", logger)).first
    }

    /// The user's ledger, newest first; `startingAfter` is the id of the last row of the page
    /// before (as the transaction history pages).
    public func history(user: String, limit: Int, startingAfter: UUID? = nil) async throws -> [BalanceTransaction] {
        try await Self.rows(run(
            """
            SELECT \(unescaped: Self.columns) FROM balance_transactions
            WHERE user_id = \(user)
              AND (\(startingAfter)::uuid IS NULL
                   OR position < (SELECT position FROM balance_transactions WHERE id = \(startingAfter) AND user_id = \(user)))
            ORDER BY position DESC LIMIT \(limit)
            """, logger))
    }

    /// A ledger row to announce, with the stored provider event that caused it, when one did.
    public struct Unannounced: Sendable {
        public struct CauseEvent: Sendable {
            public var source: String
            public var type: String
            public var externalID: String
            public var origin: String
            public var environment: String?
        }

        public var row: BalanceTransaction
        public var cause: CauseEvent?
        /// The row's idempotency key (a grant's names the provider's transaction).
        public var key: String?
    }

    /// Takes the ledger rows not yet announced, oldest first, taking them off the queue of rows
    /// due (`balance_announcements_due`, filled by a trigger on every ledger row written) in the
    /// announcer's transaction (on a connection inside one: rolled back, they are due again), in
    /// one statement. Another transaction taking the same rows meanwhile (an announcer whose
    /// lease ran out) makes this one wait, then skip them (a row it waited for is gone once that
    /// one commits), so a row is announced once.
    ///
    /// Each row taken, ledger row and cause event is found by one probe of its primary key
    /// (`= ANY (ARRAY(…))`, `LATERAL … LIMIT 1`), never by a scan: written as `IN (…)` joins,
    /// PostgreSQL hashed a scan of the whole ledger and queue a pass (1.4 ms of a 3 ms pass of 200
    /// rows at 16,000 ledger rows, growing with the ledger; Benchmarks/HISTORY.md).
    public func takeUnannounced(limit: Int) async throws -> [Unannounced] {
        var due: [Unannounced] = []
        for try await (
            id, user, adjustments, applied, balances, shortfall, cause, reason, metadata, actor, createdAt, expiresAt, key, _, _,
            source, type, externalID, origin, environment
        ) in try await run(
            """
            WITH taken AS (
                DELETE FROM balance_announcements_due d
                WHERE d.position = ANY (ARRAY(SELECT position FROM balance_announcements_due ORDER BY position LIMIT \(limit)))
                RETURNING d.position
            )
            SELECT \(unescaped: Self.columns), idempotency_key, cause_event_id, position, e.source, e.type, e.external_id, e.origin, e.environment
            FROM balance_transactions
            LEFT JOIN LATERAL (
                SELECT source, type, external_id, origin, environment FROM events WHERE events.id = balance_transactions.cause_event_id LIMIT 1
            ) e ON true
            WHERE position = ANY (ARRAY(SELECT position FROM taken))
            ORDER BY position
            """, logger
        ).decode((UUID, String, String, String, String, String?, String, String?, String?, String?, Date, Date?, String?, Int64?, Int64,
                  String?, String?, String?, String?, String?).self) {
            let row = try Self.transaction((id, user, adjustments, applied, balances, shortfall, cause, reason, metadata, actor, createdAt, expiresAt))
            let cause = source.map {
                Unannounced.CauseEvent(source: $0, type: type ?? "", externalID: externalID ?? "", origin: origin ?? "webhook", environment: environment)
            }
            due.append(Unannounced(row: row, cause: cause, key: key))
        }
        return due
    }

    /// Whether `id` is one of the user's ledger rows (a cursor that is not is refused).
    public func isLedgerRow(_ id: UUID, user: String) async throws -> Bool {
        for try await _ in try await run(
            "SELECT 1 FROM balance_transactions WHERE id = \(id) AND user_id = \(user)", logger
        ).decode(Int.self) { return true }
        return false
    }

    /// The columns of ``columns``, as a row decodes them.
    typealias Columns = (UUID, String, String, String, String, String?, String, String?, String?, String?, Date, Date?)

    private static func rows(_ rows: PostgresRowSequence) async throws -> [BalanceTransaction] {
        var found: [BalanceTransaction] = []
        for try await columns in rows.decode(Columns.self) { found.append(try transaction(columns)) }
        return found
    }

    private static func transaction(_ columns: Columns) throws -> BalanceTransaction {
        let (id, user, adjustments, applied, balances, shortfall, cause, reason, metadata, actor, createdAt, expiresAt) = columns
        guard let cause = BalanceCause(rawValue: cause) else { throw StateStoreError(reason: "unknown balance cause \(cause)") }
        return BalanceTransaction(
            id: id, userID: user, adjustments: try CurrencyAmountsText.decode(adjustments),
            applied: try CurrencyAmountsText.decode(applied), balances: try CurrencyAmountsText.decode(balances),
            shortfall: try shortfall.map(CurrencyAmountsText.decode), cause: cause, reason: reason,
            metadata: try metadata.map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }, actor: actor,
            createdAt: createdAt, expiresAt: expiresAt)
    }

    private static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
