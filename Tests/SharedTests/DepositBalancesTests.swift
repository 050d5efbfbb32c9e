// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

/// `sluice_deposit_balances` (sql/functions): many deposits in one statement, as the grants of a
/// batch of applied events are made, against the same deposits made one call at a time, as
/// `sluice_adjust_balances` makes each.
@Suite(.timeLimit(.minutes(3)))
struct DepositBalancesTests {
    /// One deposit of a call: what `sluice_write_applied_batch` sends for a grant.
    struct Deposit: Encodable {
        var user_id: String
        var adjustments: [String: Int64]
        var cause = "purchase"
        var idempotency_key: String?
        var expires_at: String?
        var actor: String?
    }

    /// The ledger as the tests compare it: each row's user, key and balances after, in order.
    struct LedgerRow: Equatable, CustomStringConvertible {
        var user: String
        var key: String?
        var balances: String
        var description: String { "\(user) \(key ?? "-") \(balances)" }
    }

    @Test func manyDepositsInOneCallAreMadeInOrderOnceEach() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            _ = try await store.adjust(user: "a", try BalanceAdjustments(["credits": 10]), cause: .purchase, key: "k0", digest: nil)
            let made = try await Self.deposit([
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                Deposit(user_id: "b", adjustments: ["credits": 7], idempotency_key: "k1"),
                Deposit(user_id: "a", adjustments: ["credits": 100], idempotency_key: "k0"),
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                Deposit(user_id: "a", adjustments: ["credits": 3, "gems": 1], idempotency_key: "k2", expires_at: "2031-01-01T00:00:00Z"),
                Deposit(user_id: "a", adjustments: ["credits": 2], cause: "operator", actor: "support"),
            ], on: db.client)
            #expect(made == 4, "a key the ledger has, or the call had before, is not made again")
            #expect(try await Self.ledger(db.client) == [
                LedgerRow(user: "a", key: "k0", balances: #"{"credits": 10}"#),
                LedgerRow(user: "a", key: "k1", balances: #"{"credits": 15}"#),
                LedgerRow(user: "b", key: "k1", balances: #"{"credits": 7}"#),
                LedgerRow(user: "a", key: "k2", balances: #"{"gems": 1, "credits": 18}"#),
                LedgerRow(user: "a", key: nil, balances: #"{"credits": 20}"#),
            ])
            #expect(try await store.balances(user: "a") == ["credits": 20, "gems": 1])
            #expect(try await store.balances(user: "b") == ["credits": 7])
            var lots: [String] = []
            for try await (currency, remaining, expires) in try await db.client.query(
                "SELECT currency, remaining, expires_at FROM balance_lots ORDER BY currency", logger: TestDatabase.logger
            ).decode((String, Int64, Date).self) {
                lots.append("\(currency) \(remaining) \(Int(expires.timeIntervalSince1970))")
            }
            #expect(lots == ["credits 3 1924992000", "gems 1 1924992000"], "only the deposit with expires_at keeps lots")
        }
    }

    @Test func aDepositMayNotTakeAway() async throws {
        try await TestDatabase.with { db in
            await #expect(throws: (any Error).self) {
                _ = try await Self.deposit([
                    Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "k1"),
                    Deposit(user_id: "a", adjustments: ["credits": -1], idempotency_key: "k2"),
                ], on: db.client)
            }
            let ledger = try await Self.ledger(db.client)
            #expect(ledger.isEmpty, "nothing of the call is made")
            // An amount below zero written as a string is cast, and refused, like a number (the
            // function's first test looks only for numbers below zero; it must not let it by).
            // The call adds more gems than it takes, so the balances' own floor would not refuse it.
            #expect(try await Self.deposit([Deposit(user_id: "b", adjustments: ["gems": 10])], on: db.client) == 1)
            for amount in [#""-1""#, "-1", "-0.5", #""x""#] {
                let json = #"[{"user_id": "b", "adjustments": {"gems": 5}, "cause": "purchase"}, "#
                    + #"{"user_id": "b", "adjustments": {"gems": "# + amount + #"}, "cause": "purchase"}]"#
                await #expect(throws: (any Error).self, "\(amount)") {
                    for try await _ in try await db.client.query(
                        "SELECT sluice_deposit_balances(\(json)::jsonb)", logger: TestDatabase.logger) {}
                }
            }
            #expect(try await Self.ledger(db.client).map(\.user) == ["b"], "nothing of those calls is made")
            // Through the API's function: credits that expire are only ever added.
            await #expect(throws: (any Error).self) {
                for try await _ in try await db.client.query(
                    """
                    SELECT sluice_adjust_balances('a', '{"credits": 5, "gems": -1}', 'operator', NULL, NULL, true, NULL, NULL, NULL,
                        now() + interval '1 day', NULL, NULL)
                    """, logger: TestDatabase.logger) {}
            }
            let after = try await Self.ledger(db.client)
            #expect(after.map(\.user) == ["b"], "a change that also takes may not expire")
        }
    }

    /// The one statement against a plain model of the deposits made one by one (a key the user
    /// used before is skipped, a purchase's `grant:` key whoever used it; each row's balances are
    /// those after it, of the currencies it touched), over keys repeated within the call, a grant
    /// named for two users, unkeyed deposits, and a key that reads like the place of an unkeyed
    /// deposit in the call.
    @Test func oneCallForManyEndsAsTheDepositsOneByOne() async throws {
        try await TestDatabase.with { db in
            let plan: [Deposit] = [
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: "g1"),
                Deposit(user_id: "b", adjustments: ["credits": 1, "gems": 2], idempotency_key: "g1"),
                Deposit(user_id: "a", adjustments: ["gems": 4], idempotency_key: "4"),
                Deposit(user_id: "a", adjustments: ["credits": 5], idempotency_key: nil),
                Deposit(user_id: "c", adjustments: ["credits": 0], idempotency_key: "g3"),
                Deposit(user_id: "b", adjustments: ["gems": 3], idempotency_key: nil),
                Deposit(user_id: "a", adjustments: ["credits": 9, "gems": 1], idempotency_key: "g1"),
                Deposit(user_id: "b", adjustments: ["credits": 1], idempotency_key: "g1"),
                Deposit(user_id: "c", adjustments: ["credits": 8], idempotency_key: "g4"),
                Deposit(user_id: "a", adjustments: ["credits": 2], idempotency_key: nil),
                Deposit(user_id: "b", adjustments: ["credits": 50], idempotency_key: "grant:transaction:stripe:production:pi_1"),
                Deposit(user_id: "c", adjustments: ["credits": 50], idempotency_key: "grant:transaction:stripe:production:pi_1"),
                Deposit(user_id: "b", adjustments: ["credits": 50], idempotency_key: "grant:transaction:stripe:production:pi_1"),
            ]
            var balances: [String: [String: Int64]] = [:]
            var used: Set<[String]> = []
            var expected: [LedgerRow] = []
            for deposit in plan {
                if let key = deposit.idempotency_key,
                   !used.insert(key.hasPrefix("grant:") ? [key] : [deposit.user_id, key]).inserted { continue }
                var after: [String: Int64] = [:]
                for (currency, amount) in deposit.adjustments {
                    balances[deposit.user_id, default: [:]][currency, default: 0] += amount
                    after[currency] = balances[deposit.user_id]?[currency]
                }
                expected.append(LedgerRow(user: deposit.user_id, key: deposit.idempotency_key, balances: Self.jsonb(after)))
            }
            let made = try await Self.deposit(plan, on: db.client)
            let ledger = try await Self.ledger(db.client)
            #expect(made == expected.count)
            #expect(ledger == expected)
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            for (user, amounts) in balances {
                let stored = try await store.balances(user: user)
                #expect(stored == amounts, "\(user)")
            }
        }
    }

    /// A deposit through the API's function: the same request again is its first answer, another
    /// request under its key is refused (the digest goes to the deposit function as JSON).
    @Test func aDepositsKeyAnswersItsRequestAndRefusesAnother() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            let deposit = try BalanceAdjustments(["credits": 10])
            let first = try await store.adjust(user: "a", deposit, cause: .api, key: "k", digest: [0, 1, 0xfe, 0x5c])
            guard case .applied(let row) = first else {
                Issue.record("the deposit was not made: \(first)")
                return
            }
            #expect(try await store.adjust(user: "a", deposit, cause: .api, key: "k", digest: [0, 1, 0xfe, 0x5c]) == .replayed(row))
            #expect(try await store.adjust(user: "a", deposit, cause: .api, key: "k", digest: [0, 1, 0xfe, 0x5d]) == .keyReused)
            #expect(try await store.balances(user: "a") == ["credits": 10])
        }
    }

    /// `sluice_write_applied_batch` makes a batch's balance changes in the order of its calls: a
    /// run of grants in one call of the deposit function, a take-back between two runs; each row
    /// names the event of its call, and an expiring grant's end arrives to the microsecond. The
    /// changes are written as the worker writes them (``CurrencyGrantDecision/argument(_:causeEventID:)``).
    @Test func aTakeBackInABatchComesBetweenTheGrantsAroundIt() async throws {
        try await TestDatabase.with { db in
            let end = Date(timeIntervalSince1970: 1_900_000_000.123456)
            let first = CurrencyGrantDecision.argument([
                .grant(user: "u", amounts: ["credits": 10], cause: .purchase, key: "grant:a"),
                .takeBack(grantKey: "grant:a", numerator: 1, denominator: 1, key: "take_back:a"),
            ], causeEventID: 41)
            let second = CurrencyGrantDecision.argument(
                [.grant(user: "u", amounts: ["credits": 5], cause: .renewal, key: "grant:b", expiresAt: end)], causeEventID: 42)
            var calls = JSONTextWriter()
            calls.array { array in
                for changes in [first, nil, second] { array.object { $0.member("balance_changes", jsonText: changes) } }
            }
            try await db.client.query("SELECT sluice_write_applied_batch(\(calls.text)::jsonb)", logger: TestDatabase.logger)
            #expect(try await Self.ledger(db.client) == [
                LedgerRow(user: "u", key: "grant:a", balances: #"{"credits": 10}"#),
                LedgerRow(user: "u", key: "take_back:a", balances: #"{"credits": 0}"#),
                LedgerRow(user: "u", key: "grant:b", balances: #"{"credits": 5}"#),
            ])
            var causes: [Int64?] = []
            var ends: [Int64?] = []
            for try await (cause, expiresAt) in try await db.client.query(
                "SELECT cause_event_id, (extract(epoch FROM expires_at) * 1000000)::bigint FROM balance_transactions ORDER BY position",
                logger: TestDatabase.logger
            ).decode((Int64?, Int64?).self) {
                causes.append(cause)
                ends.append(expiresAt)
            }
            #expect(causes == [41, 41, 42])
            // Microseconds since 1970 read back; the argument sent them since 2000.
            #expect(ends == [nil, nil, end.postgresMicroseconds + 946_684_800_000_000])
        }
    }

    /// A worker of the release before, still running during a rolling update, wrote a call's
    /// links and balance changes as strings holding their JSON, and a grant with its own names
    /// (`user`, `amounts`, `key`; the event from the call's record): the function reads them as
    /// today's (sql/functions/sluice_call_array.sql).
    @Test func aCallOfTheReleaseBeforeIsStillRead() async throws {
        try await TestDatabase.with { db in
            let links = #"[{"kind":"stripe_customer","scope":"acct_1","external_id":"cus_1","user_id":"u"}]"#
            let changes = #"[{"kind":"grant","user":"u","amounts":{"credits":10},"cause":"purchase","key":"grant:a"},"#
                + #"{"kind":"take_back","of":"grant:a","numerator":1,"denominator":2,"key":"take_back:a"},"#
                + #"{"kind":"give_back","of":"grant:a","key":"give_back:a"},"#
                + #"{"kind":"grant","user":"u","amounts":{"credits":1},"cause":"renewal","key":"grant:e","expires_at_us":1000000000000000}]"#
            var calls = JSONTextWriter()
            calls.array { array in
                array.object { call in
                    call.member("record_event_id", Int64(43))
                    call.member("record_outcome", "applied")
                    call.member("links", links)
                    call.member("balance_changes", changes)
                }
            }
            try await db.client.query("SELECT sluice_write_applied_batch(\(calls.text)::jsonb)", logger: TestDatabase.logger)
            #expect(try await Self.ledger(db.client) == [
                LedgerRow(user: "u", key: "grant:a", balances: #"{"credits": 10}"#),
                LedgerRow(user: "u", key: "take_back:a", balances: #"{"credits": 5}"#),
                LedgerRow(user: "u", key: "give_back:a", balances: #"{"credits": 10}"#),
                LedgerRow(user: "u", key: "grant:e", balances: #"{"credits": 11}"#),
            ])
            #expect(try await db.scalar("SELECT count(*) FROM balance_transactions WHERE cause_event_id = 43") == 4)
            // Microseconds since 2000 sent; since 1970 read back.
            #expect(try await db.scalar(
                "SELECT (extract(epoch FROM expires_at) * 1000000)::bigint FROM balance_transactions WHERE idempotency_key = 'grant:e'")
                == 1_000_000_000_000_000 + 946_684_800_000_000)
            #expect(try await db.scalar("SELECT count(*) FROM provider_links WHERE external_id = 'cus_1' AND user_id = 'u'") == 1)
        }
    }

    /// Two announcers at once (one whose lease ran out, one that took it over): the second waits
    /// for the first's transaction, then finds its rows taken, so each row is announced once; a
    /// taker that rolls back leaves its rows due.
    @Test func rowsTakenForAnnouncingAreTakenOnce() async throws {
        try await TestDatabase.with { db in
            let store = BalanceStore(client: db.client, logger: TestDatabase.logger)
            for n in 1...3 { _ = try await store.adjust(user: "a", try BalanceAdjustments(["credits": 1]), cause: .api, key: "k\(n)", digest: nil) }
            struct RolledBack: Error {}
            await #expect(throws: PostgresTransactionError.self) {
                try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                    #expect(try await BalanceStore(connection: connection, logger: TestDatabase.logger).takeUnannounced(limit: 10).count == 3)
                    throw RolledBack()
                }
            }
            // The other announcer, on a connection of its own, takes once the first has taken and
            // while its transaction is still open.
            let (taken, tookFirst) = AsyncStream.makeStream(of: Void.self)
            func takeAfterTheFirst() async throws -> [BalanceStore.Unannounced] {
                for await _ in taken { break }
                return try await db.client.withTransaction(logger: TestDatabase.logger) { other in
                    try await BalanceStore(connection: other, logger: TestDatabase.logger).takeUnannounced(limit: 10)
                }
            }
            async let second = takeAfterTheFirst()
            let first = try await db.client.withTransaction(logger: TestDatabase.logger) { connection in
                let rows = try await BalanceStore(connection: connection, logger: TestDatabase.logger).takeUnannounced(limit: 10)
                tookFirst.yield()
                tookFirst.finish()
                try await Task.sleep(for: .milliseconds(300))
                return rows
            }
            let secondTook = try await second
            #expect(first.map(\.key) == ["k1", "k2", "k3"], "a rolled-back take leaves the rows due, in ledger order")
            #expect(secondTook.isEmpty, "the second taker waited, then found the rows taken")
        }
    }

    /// Each due row and its ledger row is found by a probe of its key, whatever the sizes of the
    /// ledger and the queue: a pass of the announcer never scans either (it did, a hash join over
    /// the whole ledger every pass). The cause event is a `LIMIT 1` probe of its own, a scan only
    /// of a table as small as this test's, where a scan is cheaper.
    @Test func takingDueRowsNeverScansTheLedger() async throws {
        try await TestDatabase.with { db in
            try await db.client.withConnection { connection in
                try await connection.query(
                    """
                    SELECT sluice_deposit_balances(jsonb_agg(jsonb_build_object('user_id', 'user_' || n, 'adjustments',
                        jsonb_build_object('credits', n), 'cause', 'purchase', 'idempotency_key', 'grant:' || n)))
                    FROM generate_series(1, 2000) AS n
                    """, logger: TestDatabase.logger)
                try await connection.query("ANALYZE balance_transactions, balance_announcements_due", logger: TestDatabase.logger)
                func scans() async throws -> [String: Int64] {
                    try await connection.query("SELECT pg_stat_force_next_flush()", logger: TestDatabase.logger)
                    try await connection.query("SELECT pg_stat_clear_snapshot()", logger: TestDatabase.logger)
                    var counts: [String: Int64] = [:]
                    for try await (table, count) in try await connection.query(
                        """
                        SELECT relname::text, seq_scan FROM pg_stat_user_tables
                        WHERE relname IN ('balance_transactions', 'balance_announcements_due')
                        """, logger: TestDatabase.logger
                    ).decode((String, Int64).self) { counts[table] = count }
                    return counts
                }
                let before = try await scans()
                var taken: [BalanceStore.Unannounced] = []
                for _ in 1...3 {
                    taken += try await BalanceStore(connection: connection, logger: TestDatabase.logger).takeUnannounced(limit: 200)
                }
                let after = try await scans()
                #expect(after == before)
                #expect(before.count == 2)
                #expect(taken.map(\.key) == (1...600).map { "grant:\($0)" }, "the oldest due rows, in ledger order")
            }
        }
    }

    /// Balances as PostgreSQL prints a jsonb object: keys by length, then bytes.
    static func jsonb(_ amounts: [String: Int64]) -> String {
        let keys = amounts.keys.sorted { ($0.utf8.count, $0) < ($1.utf8.count, $1) }
        return "{" + keys.map { "\"\($0)\": \(amounts[$0]!)" }.joined(separator: ", ") + "}"
    }

    /// Calls the function; the number of rows it made.
    static func deposit(_ deposits: [Deposit], on client: PostgresClient) async throws -> Int {
        let json = String(decoding: try JSONEncoder().encode(deposits), as: UTF8.self)
        var made = 0
        for try await ids in try await client.query(
            "SELECT sluice_deposit_balances(\(json)::jsonb)", logger: TestDatabase.logger
        ).decode([UUID].self) {
            made = ids.count
        }
        return made
    }

    static func ledger(_ client: PostgresClient) async throws -> [LedgerRow] {
        var rows: [LedgerRow] = []
        for try await (user, key, balances) in try await client.query(
            "SELECT user_id, idempotency_key, balances::text FROM balance_transactions ORDER BY position", logger: TestDatabase.logger
        ).decode((String, String?, String).self) {
            rows.append(LedgerRow(user: user, key: key, balances: balances))
        }
        return rows
    }
}
