// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared

/// Answers Apple's `CONSUMPTION_REQUEST`s (docs/credits.md, "Refund requests") with Send
/// Consumption Information (v2), when `CONSUMPTION_RESPONSE=on`: each recorded request
/// (``ConsumptionRequests``) within Apple's 12 hours, its body decided by ``ConsumptionAnswer``
/// from the purchase's ledger row, its grant and the user's balances now; a request about a
/// purchase Sluice has no record of waits for it, looked at every ``purchaseWait``. Apple's
/// failures (`429`, `5xx`, no answer) are retried with a growing delay; a refusal (`4xx`) is kept
/// as failed with Apple's message. Runs in the worker holding the `consumption-response` lease.
struct ConsumptionResponder: Service, CustomStringConvertible {
    /// Apple's window: a request older than this is not answered.
    static let window: TimeInterval = 12 * 3_600
    /// How long one pass (database and Apple) may take before it is abandoned and the next tried
    /// (less when the lease is shorter: ``MaintenanceLease/passTimeLimit(interval:requested:)``).
    static let passTimeLimit: Duration = .seconds(120)

    let client: PostgresClient
    let api: AppStoreServerAPI
    let settings: ConsumptionSettings
    let lease: MaintenanceLease
    let interval: Duration
    let logger: Logger

    var description: String { "ConsumptionResponder" }

    func run() async throws {
        await lease.runPeriodically(every: interval, failure: "answering Apple's consumption requests failed", logger: logger) { try await runOnce() }
    }

    /// One pass, if this worker holds the lease: the number answered, or `nil` when another worker holds it.
    @discardableResult
    func runOnce(now: Date = Date()) async throws -> Int? {
        let responder = self
        return try await lease.ifHeld(interval: interval, timeLimit: Self.passTimeLimit) {
            var answered = 0
            for request in try await responder.due() {
                try Task.checkCancellation()
                if try await responder.answer(request, now: now) { answered += 1 }
            }
            return answered
        }
    }

    struct Request: Sendable {
        var id: Int64
        var transactionID: String
        var environment: PurchaseEnvironment
        var bundleID: String
        var requestedAt: Date
        var attempts: Int
    }

    /// The requests due, the longest due first: fifty waiting for purchases Sluice has no record
    /// of, due again every ``purchaseWait``, never keep a newer request from its turn.
    func due() async throws -> [Request] {
        var due: [Request] = []
        for try await (id, transaction, environment, bundle, requestedAt, attempts) in try await client.query(
            """
            SELECT id, transaction_id, environment, bundle_id, requested_at, attempts FROM consumption_requests
            WHERE state = 'pending' AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT 50
            """, logger: logger
        ).decode((Int64, String, String, String, Date, Int32).self) {
            guard let environment = PurchaseEnvironment(rawValue: environment) else { continue }
            due.append(Request(
                id: id, transactionID: transaction, environment: environment, bundleID: bundle, requestedAt: requestedAt, attempts: Int(attempts)))
        }
        return due
    }

    /// - Returns: whether Apple took the answer.
    func answer(_ request: Request, now: Date) async throws -> Bool {
        guard now.timeIntervalSince(request.requestedAt) < Self.window else {
            try await finish(request.id, state: "expired", body: nil, error: "Apple's 12 hours to answer passed")
            return false
        }
        guard let answer = ConsumptionAnswer.decide(
            try await purchase(request), policy: settings.refundPreference, sampleContentProvided: settings.sampleContentProvided, now: now)
        else {
            try await waitForPurchase(request)
            return false
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = try encoder.encode(answer)
        let bodyText = String(decoding: body, as: UTF8.self)
        let status: Int
        let error: String?
        do {
            (status, error) = try await api.sendConsumptionInformation(
                transactionID: request.transactionID, body: body, bundleID: request.bundleID, environment: request.environment, logger: logger)
        } catch let error where ProviderCallRetry.counts(error) {
            try await retry(request, body: bodyText, error: ErrorText.describe(error))
            return false
        }
        switch status {
        case 200..<300:
            try await finish(request.id, state: "sent", body: bodyText, error: nil)
            logger.info("consumption information sent", metadata: ["transaction_id": "\(request.transactionID)"])
            return true
        case let status where ProviderCall.asksToRetry(status):
            try await retry(request, body: bodyText, error: "Apple answered \(status): \(error ?? "")")
            return false
        default:
            logger.warning("Apple refused the consumption information", metadata: ["status": "\(status)", "error": "\(error ?? "")"])
            try await finish(request.id, state: "failed", body: bodyText, error: "Apple answered \(status): \(error ?? "")")
            return false
        }
    }

    /// What Sluice knows of the purchase: its ledger row, its grant, and the balances of the user
    /// it was granted to, with what reached them after the grant. Read in one snapshot
    /// (`REPEATABLE READ`): a spend committed between two of the reads would be counted in the
    /// balances and not in the lots, or the other way round.
    private func purchase(_ request: Request) async throws -> ConsumptionAnswer.Purchase {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            return try await purchase(request, on: connection)
        }
    }

    private func purchase(_ request: Request, on connection: PostgresConnection) async throws -> ConsumptionAnswer.Purchase {
        var purchase = ConsumptionAnswer.Purchase()
        for try await (status, userID, purchasedAt, periodEnd) in try await connection.query(
            """
            SELECT status, user_id, purchased_at, period_end FROM transactions
            WHERE source = 'store_kit' AND environment = \(request.environment.rawValue) AND provider_transaction_id = \(request.transactionID)
            """, logger: logger
        ).decode((String, String?, Date?, Date?).self) {
            guard let status = TransactionStatus(rawValue: status) else { continue }
            var transaction = TransactionState(source: .storeKit, providerTransactionID: request.transactionID, environment: request.environment, status: status)
            transaction.userID = userID
            transaction.purchasedAt = purchasedAt
            transaction.periodEnd = periodEnd
            purchase.transaction = transaction
            purchase.periodStart = purchasedAt
            purchase.periodEnd = periodEnd
        }
        guard let transaction = purchase.transaction else { return purchase }
        let grantKey = CurrencyGrantDecision.keys(of: transaction).grant
        var grant: (position: Int64, user: String, expires: Bool)?
        for try await (applied, position, grantee, expires) in try await connection.query(
            """
            SELECT applied::text, position, user_id, expires_at IS NOT NULL FROM balance_transactions
            WHERE idempotency_key = \(grantKey) ORDER BY position LIMIT 1
            """, logger: logger
        ).decode((String, Int64, String, Bool).self) {
            purchase.granted = try JSONDecoder().decode([String: Int64].self, from: Data(applied.utf8))
            grant = (position, grantee, expires)
        }
        if let grant {
            let expiring = try await lots(ofUser: grant.user, on: connection)
            purchase.balances = try await BalanceStore(connection: connection, logger: logger).balances(user: grant.user)
                .merging(expiring.mapValues { -$0 }, uniquingKeysWith: +)
            purchase.arrivedSince = try await arrived(to: grant.user, after: grant.position, on: connection)
            if grant.expires { purchase.grantLots = try await lots(ofGrant: grant.position, on: connection) }
        }
        return purchase
    }

    /// What the lots of `user`'s grants that expire still hold, by currency.
    private func lots(ofUser user: String, on connection: PostgresConnection) async throws -> [String: Int64] {
        try await sums(connection.query(
            "SELECT currency, sum(remaining)::bigint FROM balance_lots WHERE user_id = \(user) AND remaining > 0 GROUP BY currency", logger: logger))
    }

    /// What the lots of the grant at `position` still hold, by currency: its own, and those of
    /// the give-backs of it (given-back credits expire with the grant, in a lot of the give-back's row).
    private func lots(ofGrant position: Int64, on connection: PostgresConnection) async throws -> [String: Int64] {
        try await sums(connection.query(
            """
            SELECT currency, sum(remaining)::bigint FROM balance_lots
            WHERE grant_position = ANY(ARRAY(SELECT position FROM balance_transactions WHERE reverses = \(position)) || \(position))
            GROUP BY currency
            """, logger: logger))
    }

    private func sums(_ rows: PostgresRowSequence) async throws -> [String: Int64] {
        var sums: [String: Int64] = [:]
        for try await (currency, amount) in rows.decode((String, Int64).self) { sums[currency] = amount }
        return sums
    }

    /// What reached `user`'s balances in the ledger rows after the grant at `position`, does not
    /// expire and is still there to be spent, by currency: the positive amounts each later row
    /// applied, less what later took those back (the rows that reverse them). The grant's own
    /// take-backs, give-backs and expiries are not arrivals; nor are grants that expire, nor the
    /// rows that reverse them (their lots are counted apart).
    private func arrived(to user: String, after position: Int64, on connection: PostgresConnection) async throws -> [String: Int64] {
        try await sums(connection.query(
            """
            SELECT a.key, sum(a.value::bigint)::bigint FROM balance_transactions t, jsonb_each_text(t.applied) AS a
            WHERE t.user_id = \(user) AND t.position > \(position) AND t.reverses IS DISTINCT FROM \(position)
              AND (a.value::bigint > 0 OR t.reverses > \(position)) AND t.expires_at IS NULL
              AND NOT EXISTS (SELECT 1 FROM balance_transactions g WHERE g.position = t.reverses AND g.expires_at IS NOT NULL)
            GROUP BY a.key
            """, logger: logger))
    }

    /// Ends the request as `state`. An expiry keeps the error it waited on (Apple failing, or no
    /// record of the purchase) after its own, so the operator sees why it was never sent.
    private func finish(_ id: Int64, state: String, body: String?, error: String?) async throws {
        try await client.query(
            """
            UPDATE consumption_requests SET state = \(state), attempts = attempts + 1, body = COALESCE(\(body)::jsonb, body),
                last_error = CASE WHEN \(state) = 'expired' AND last_error IS NOT NULL THEN \(error) || ' (before: ' || last_error || ')'
                                  ELSE \(error) END,
                sent_at = CASE WHEN \(state) = 'sent' THEN now() END
            WHERE id = \(id)
            """, logger: logger)
    }

    /// How often a request whose purchase Sluice has not seen is looked at again: answered within
    /// this of the purchase being applied, and never scheduled past Apple's window by more.
    static let purchaseWait: TimeInterval = 60

    /// Not answered yet: Sluice has no record of the purchase. Looked at again after
    /// ``purchaseWait``; not counted as an attempt (nothing was sent), so a failure of Apple's
    /// afterwards is retried on its own schedule from the start.
    private func waitForPurchase(_ request: Request) async throws {
        let error = "Sluice has no record of transaction \(request.transactionID) yet: not answered, since it cannot say whether it was delivered"
        try await client.query(
            """
            UPDATE consumption_requests SET last_error = \(error), next_attempt_at = now() + make_interval(secs => \(Self.purchaseWait))
            WHERE id = \(request.id)
            """, logger: logger)
    }

    /// Tried again later (``ProviderCallRetry``) after Apple failed to take `body`.
    private func retry(_ request: Request, body: String, error: String) async throws {
        let delay = ProviderCallRetry.delay(afterAttempts: request.attempts)
        try await client.query(
            """
            UPDATE consumption_requests SET attempts = attempts + 1, body = \(body)::jsonb, last_error = \(error),
                next_attempt_at = now() + make_interval(secs => \(delay))
            WHERE id = \(request.id)
            """, logger: logger)
    }
}

/// `CONSUMPTION_RESPONSE`, `CONSUMPTION_REFUND_PREFERENCE`, `CONSUMPTION_SAMPLE_CONTENT_PROVIDED`.
struct ConsumptionSettings: Sendable, Equatable {
    var refundPreference: ConsumptionAnswer.Policy = .none
    var sampleContentProvided = false

    static let help = HelpText.wrapped("""
          CONSUMPTION_RESPONSE      on: answer Apple's CONSUMPTION_REQUEST with Send Consumption Information, saying the customer consented (needs the App Store Server API key; default off)
          CONSUMPTION_REFUND_PREFERENCE none, decline, grant_full, grant_prorated or by_consumption (grant_full under a tenth used, else decline) (default none)
          CONSUMPTION_SAMPLE_CONTENT_PROVIDED true when the app offers a free sample or trial before purchase (default false)
        """)

    /// `nil` when `CONSUMPTION_RESPONSE` is off.
    static func configured(by environment: EnvironmentValues, appleAPI: Bool) throws -> ConsumptionSettings? {
        guard try environment.bool("CONSUMPTION_RESPONSE", default: false) else { return nil }
        guard appleAPI else {
            throw ConfigurationError(
                variable: "CONSUMPTION_RESPONSE", reason: "needs the App Store Server API key: set \(AppStoreAPISettings.variables)")
        }
        var settings = ConsumptionSettings()
        if let text = environment.string("CONSUMPTION_REFUND_PREFERENCE") {
            guard let policy = ConsumptionAnswer.Policy(rawValue: text) else {
                throw ConfigurationError(
                    variable: "CONSUMPTION_REFUND_PREFERENCE", reason: "must be one of \(ConsumptionAnswer.Policy.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.refundPreference = policy
        }
        settings.sampleContentProvided = try environment.bool("CONSUMPTION_SAMPLE_CONTENT_PROVIDED", default: false)
        return settings
    }
}
