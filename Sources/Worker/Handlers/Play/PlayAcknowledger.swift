// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared

/// Acknowledges the Google Play purchases Sluice applied (``PlayAcknowledgements``): Google refunds
/// a purchase not acknowledged within three days. Each is acknowledged once; Google's failures are
/// retried with a growing delay, and one still unacknowledged two days after its purchase is logged
/// as an error on every pass (and counted in `sluice_play_unacknowledged`). Runs in the worker
/// holding the `play-acknowledge` lease.
struct PlayAcknowledger: Service, CustomStringConvertible {
    /// When an unacknowledged purchase becomes an alert: a day before Google refunds it.
    static let alertAge: TimeInterval = 2 * 86_400
    /// How long one pass may take (less when the lease is shorter:
    /// ``MaintenanceLease/passTimeLimit(interval:requested:)``).
    static let passTimeLimit: Duration = .seconds(90)

    let client: PostgresClient
    let api: PlayDeveloperAPI
    let lease: MaintenanceLease
    let interval: Duration
    var metrics: WorkerMetrics?
    let logger: Logger

    var description: String { "PlayAcknowledger" }

    func run() async throws {
        await lease.runPeriodically(every: interval, failure: "acknowledging Google Play purchases failed", logger: logger) { try await runOnce() }
    }

    struct Due: Sendable {
        var token: String
        var packageName: String
        var kind: PlayProductKind
        var productID: String
        var purchasedAt: Date
        var attempts: Int
    }

    /// One pass, if this worker holds the lease: the number acknowledged, or `nil` when another worker holds it.
    @discardableResult
    func runOnce(now: Date = Date()) async throws -> Int? {
        let acknowledger = self
        return try await lease.ifHeld(interval: interval, timeLimit: Self.passTimeLimit) {
            var acknowledged = 0
            for due in try await acknowledger.due() {
                try Task.checkCancellation()
                if try await acknowledger.acknowledge(due, now: now) { acknowledged += 1 }
            }
            try await acknowledger.alert(now: now)
            return acknowledged
        }
    }

    func due() async throws -> [Due] {
        var due: [Due] = []
        for try await (token, package, kind, product, purchasedAt, attempts) in try await client.query(
            """
            SELECT purchase_token, package_name, product_kind, product_id, purchased_at, attempts FROM play_acknowledgements
            WHERE acknowledged_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= now() ORDER BY next_attempt_at LIMIT 100
            """, logger: logger
        ).decode((String, String, String, String, Date, Int32).self) {
            guard let kind = PlayProductKind(rawValue: kind) else { continue }
            due.append(Due(token: token, packageName: package, kind: kind, productID: product, purchasedAt: purchasedAt, attempts: Int(attempts)))
        }
        return due
    }

    /// - Returns: whether Google took it, or had it already (a worker stopped between Google's
    ///   answer and recording it: Google refuses the second, and the purchase says it is acknowledged).
    func acknowledge(_ due: Due, now: Date) async throws -> Bool {
        do {
            try await api.acknowledge(packageName: due.packageName, kind: due.kind, productID: due.productID, token: due.token)
        } catch let error as ProviderAPIError where error.provider == PlayDeveloperAPI.provider && (400..<500).contains(error.status ?? 0)
            && error.status != 429 && error.status != 401 && error.status != 403 {
            switch try await standing(of: due) {
            case .acknowledged: break
            case .owed: return try await retry(due, error: error)
            case .notOwed(let why):
                try await client.query(
                    """
                    UPDATE play_acknowledgements SET attempts = attempts + 1, given_up_at = now(), last_error = \(why)
                    WHERE purchase_token = \(due.token)
                    """, logger: logger)
                logger.info("Google Play acknowledgement given up", metadata: ["product_id": "\(due.productID)", "reason": "\(why)"])
                return false
            }
        } catch let error where ProviderCallRetry.counts(error) {
            return try await retry(due, error: error)
        }
        try await client.query(
            """
            UPDATE play_acknowledgements SET attempts = attempts + 1, acknowledged_at = now(), last_error = NULL
            WHERE purchase_token = \(due.token)
            """, logger: logger)
        logger.info("Google Play purchase acknowledged", metadata: ["product_id": "\(due.productID)", "kind": "\(due.kind.rawValue)"])
        return true
    }

    /// Where a purchase Google refused to acknowledge stands.
    enum Standing: Equatable {
        /// Acknowledged already (a worker stopped between Google's answer and recording it).
        case acknowledged
        /// Still a paid purchase waiting: tried again.
        case owed
        /// No longer one to acknowledge, and why.
        case notOwed(String)
    }

    /// Asks Google for the purchase after a refused acknowledgement.
    private func standing(of due: Due) async throws -> Standing {
        switch due.kind {
        case .subscription:
            guard let answer = try await api.subscription(packageName: due.packageName, token: due.token),
                  let purchase = try? JSONDecoder().decode(PlaySubscriptionPurchase.self, from: answer)
            else { return .notOwed("Google no longer knows the purchase") }
            if purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" { return .acknowledged }
            let state = PlaySubscriptionState(rawValue: purchase.subscriptionState ?? "")
            return [.active, .canceled, .inGracePeriod].contains(state) ? .owed : .notOwed("the subscription is \(state.rawValue)")
        case .product:
            guard let answer = try await api.product(packageName: due.packageName, productID: due.productID, token: due.token),
                  let purchase = try? JSONDecoder().decode(PlayProductPurchase.self, from: answer)
            else { return .notOwed("Google no longer knows the purchase") }
            if purchase.acknowledgementState == 1 { return .acknowledged }
            return purchase.purchaseState == 0 ? .owed : .notOwed("the purchase's purchaseState is \(purchase.purchaseState ?? -1)")
        }
    }

    /// Tried again later (``ProviderCallRetry``).
    private func retry(_ due: Due, error: any Error) async throws -> Bool {
        let delay = ProviderCallRetry.delay(afterAttempts: due.attempts)
        try await client.query(
            """
            UPDATE play_acknowledgements SET attempts = attempts + 1, last_error = \(ErrorText.describe(error)),
                next_attempt_at = now() + make_interval(secs => \(delay))
            WHERE purchase_token = \(due.token) AND acknowledged_at IS NULL
            """, logger: logger)
        logger.warning("Google Play acknowledgement failed; retried", metadata: ["error": "\(ErrorText.describe(error))"])
        return false
    }

    /// Logs, and counts, the purchases still unacknowledged two days after they were made.
    func alert(now: Date) async throws {
        let overdue: Int64 = try await client.query(
            """
            SELECT count(*) FROM play_acknowledgements
            WHERE acknowledged_at IS NULL AND given_up_at IS NULL AND purchased_at < \(now.addingTimeInterval(-Self.alertAge))
            """, logger: logger
        ).decode(Int64.self).reduce(0) { $0 + $1 }
        metrics?.setPlayUnacknowledged(Int(overdue))
        if overdue > 0 {
            logger.error("Google Play purchases unacknowledged for two days: Google refunds them on the third", metadata: ["count": "\(overdue)"])
        }
    }
}
