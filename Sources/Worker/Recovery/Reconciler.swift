// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import Shared

/// Checks entitlements against the provider's truth — Apple's subscription status, Stripe's
/// subscription — and stores what differs as an event of its own (`origin = reconciliation`),
/// applied by the normal handlers, so the audit trail says why state changed.
///
/// Due for a check: a live subscription past `expires_at` (or its grace period) plus the leeway,
/// whose ending event never came, and one with no event for `RECONCILE_AFTER_SECONDS`; each at
/// most once per `RECONCILE_RECHECK_SECONDS`, in batches, at `RECONCILE_RATE` calls a second.
struct Reconciler: Sendable {
    /// One entitlement to check.
    struct Candidate: Sendable, Equatable {
        var entityKey: String
        var environment: PurchaseEnvironment
        var status: EntitlementStatus
        var expiresAt: Date?
    }

    /// What one check found.
    enum Outcome: String, Sendable, CaseIterable, Encodable {
        /// The provider agrees with the stored state: nothing stored.
        case unchanged
        /// The provider says otherwise: its answer was stored as an event (with `--dry-run`, would be).
        case corrected
        /// The provider knows no such subscription, or cannot be asked with the credentials configured.
        case skipped
    }

    struct Report: Sendable, Encodable {
        var checked: [String: Outcome] = [:]
        var counts: [Outcome: Int] { checked.values.reduce(into: [:]) { $0[$1, default: 0] += 1 } }
        var text: String {
            let counts = counts
            return Outcome.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ")
        }
    }

    var apple: (api: AppStoreServerAPI, verifier: AppleNotificationVerifier, bundleIDs: [String])?
    var stripe: (api: StripeAPI, environment: PurchaseEnvironment)?
    var play: (api: PlayDeveloperAPI, packageNames: [String])?
    let store: RecoveredEventStore
    let settings: RecoverySettings
    let client: PostgresClient

    /// The live subscriptions due for a check, oldest first.
    func due(limit: Int, now: Date = Date()) async throws -> [Candidate] {
        try await candidates(client.query(
            """
            SELECT entity_key, environment, status, expires_at FROM entitlements
            WHERE product_type = 'auto_renewable'
                AND status IN ('active', 'trialing', 'grace_period', 'past_due', 'cancelled', 'paused')
                AND (reconciled_at IS NULL OR reconciled_at < \(now.addingTimeInterval(-settings.recheckAfter)))
                AND (COALESCE(CASE WHEN status = 'grace_period' THEN grace_period_expires_at END, expires_at)
                        < \(now.addingTimeInterval(-settings.leeway))
                     OR last_event_time < \(now.addingTimeInterval(-settings.reconcileAfter)))
            ORDER BY COALESCE(expires_at, last_event_time) LIMIT \(limit)
            """, logger: store.logger))
    }

    /// Every subscription of a user, whatever its state.
    func candidates(user: String) async throws -> [Candidate] {
        try await candidates(client.query(
            """
            SELECT entity_key, environment, status, expires_at FROM entitlements
            WHERE user_id = \(user) AND product_type = 'auto_renewable' ORDER BY created_at
            """, logger: store.logger))
    }

    /// The subscriptions among these entitlements, whatever their state (the console's "reconcile now").
    func candidates(entityKeys: [String]) async throws -> [Candidate] {
        try await candidates(client.query(
            """
            SELECT entity_key, environment, status, expires_at FROM entitlements
            WHERE entity_key = ANY(\(entityKeys)) AND product_type = 'auto_renewable' ORDER BY created_at
            """, logger: store.logger))
    }

    private func candidates(_ rows: PostgresRowSequence) async throws -> [Candidate] {
        var result: [Candidate] = []
        for try await (key, environment, status, expires) in rows.decode((String, String, String, Date?).self) {
            result.append(Candidate(
                entityKey: key, environment: PurchaseEnvironment(rawValue: environment) ?? .production,
                status: EntitlementStatus(rawValue: status) ?? .expired, expiresAt: expires))
        }
        return result
    }

    /// Checks each candidate, at most `settings.callsPerSecond` provider calls a second.
    func check(_ candidates: [Candidate], dryRun: Bool, logger: Logger, onOutcome: (Outcome) -> Void = { _ in }) async throws -> Report {
        var report = Report()
        let spacing = Duration.milliseconds(Int64(1000 / settings.callsPerSecond))
        var next = ContinuousClock.now
        for candidate in candidates {
            try await Task.sleep(until: next)
            next = ContinuousClock.now + spacing
            let outcome: Outcome
            do {
                outcome = try await check(candidate, dryRun: dryRun, logger: logger)
            } catch let error as ProviderAPIError {
                logger.warning("reconciliation failed", metadata: ["entity": "\(candidate.entityKey)", "error": "\(error)"])
                outcome = .skipped
            }
            report.checked[candidate.entityKey] = outcome
            onOutcome(outcome)
            if !dryRun {
                try await client.query(
                    "UPDATE entitlements SET reconciled_at = now() WHERE entity_key = \(candidate.entityKey)", logger: logger)
            }
        }
        return report
    }

    private func check(_ candidate: Candidate, dryRun: Bool, logger: Logger) async throws -> Outcome {
        let key = EntityKey(candidate.entityKey)
        switch key {
        case .apple(let originalID, _):
            return try await checkApple(originalID, candidate, dryRun: dryRun, logger: logger)
        case .stripeSubscription(let id, let account, let livemode):
            return try await checkStripe(id, account: account, livemode: livemode, candidate, dryRun: dryRun, logger: logger)
        case .play(let token, let environment):
            return try await checkPlay(token, environment: environment, candidate, dryRun: dryRun, logger: logger)
        case .stripePayment, .other:
            return .skipped
        }
    }

    private func checkApple(_ originalID: String, _ candidate: Candidate, dryRun: Bool, logger: Logger) async throws -> Outcome {
        guard let apple else { return .skipped }
        for bundleID in apple.bundleIDs {
            guard let answer = try await apple.api.subscriptionStatuses(
                transactionID: originalID, bundleID: bundleID, environment: candidate.environment, logger: logger)
            else { continue }
            let last = (answer.data ?? []).flatMap { $0.lastTransactions ?? [] }.first { $0.originalTransactionId == originalID }
            guard let last, let status = last.status, let signed = last.signedTransactionInfo else { return .skipped }
            let record: EventRecord
            do {
                record = try await apple.verifier.verifySubscriptionStatus(
                    status: status, signedTransaction: signed, signedRenewal: last.signedRenewalInfo, sandbox: candidate.environment == .sandbox)
            } catch {
                logger.warning("reconciliation answer rejected", metadata: ["entity": "\(candidate.entityKey)", "reason": "\(error.reason)"])
                return .skipped
            }
            let transaction = try AppleSignedPayloadDecoder.decode(signed, as: AppleTransactionPayload.self)
            let providerEnded = status == 2 || status == 5
            if providerEnded == Self.hasEnded(candidate.status), Self.sameTime(transaction.expiresDate, candidate.expiresAt) {
                return .unchanged
            }
            var report = RecoveryReport()
            try await store.store([record], dryRun: dryRun, into: &report)
            return .corrected
        }
        return .skipped
    }

    private func checkStripe(
        _ id: String, account: String?, livemode: Bool, _ candidate: Candidate, dryRun: Bool, logger: Logger
    ) async throws -> Outcome {
        guard let stripe, stripe.environment == PurchaseEnvironment(livemode: livemode) else { return .skipped }
        guard let subscription = try await stripe.api.subscription(id, account: account, logger: logger) else { return .skipped }
        let status = subscription["status"] as? String
        let providerEnded = status == "canceled" || status == "incomplete_expired"
        let periodEnd = ((subscription["current_period_end"] as? Int)
            ?? (((subscription["items"] as? [String: Any])?["data"] as? [[String: Any]])?.first?["current_period_end"] as? Int))
            .map { Date(timeIntervalSince1970: TimeInterval($0)) }
        if providerEnded == Self.hasEnded(candidate.status), Self.sameTime(periodEnd, candidate.expiresAt) || providerEnded {
            return .unchanged
        }
        let created = Int(Date().timeIntervalSince1970)
        var event: [String: Any] = [
            "id": "reconcile_\(id)_\(created)", "object": "event", "created": created, "livemode": livemode,
            "type": (providerEnded ? StripeEventType.customerSubscriptionDeleted : .customerSubscriptionUpdated).rawValue,
            "data": ["object": subscription], "api_version": stripe.api.apiVersion ?? NSNull(),
        ]
        if let account { event["account"] = account }
        var record = try StripeRecovery.record(try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), account: account)
        record.origin = .reconciliation
        var report = RecoveryReport()
        try await store.store([record], dryRun: dryRun, into: &report)
        return .corrected
    }

    /// Asks Google for the subscription's newest token (an upgrade's, when one replaced the key's)
    /// in each configured app; stores its answer when it differs from what is stored.
    private func checkPlay(
        _ firstToken: String, environment: PurchaseEnvironment, _ candidate: Candidate, dryRun: Bool, logger: Logger
    ) async throws -> Outcome {
        guard let play else { return .skipped }
        let token = try await newestPlayToken(from: firstToken, environment: environment)
        for packageName in play.packageNames {
            let answer: ByteBuffer?
            do {
                answer = try await play.api.subscription(packageName: packageName, token: token)
            } catch let error as ProviderAPIError where error.provider == PlayDeveloperAPI.provider && error.status == 400 {
                continue  // a token of another app
            }
            guard let answer, let purchase = try? JSONDecoder().decode(PlaySubscriptionPurchase.self, from: answer) else { continue }
            let state = PlaySubscriptionState(rawValue: purchase.subscriptionState ?? "")
            let expires = (purchase.lineItems ?? []).compactMap { PlayDecider.date($0.expiryTime) }.max()
            // A refund is final; otherwise the status Google's state maps to, and its expiry, must agree.
            if [.refunded, .revoked].contains(candidate.status)
                || (PlayDecider.status(of: state, cause: nil) == candidate.status && Self.sameTime(expires, candidate.expiresAt)) {
                return .unchanged
            }
            var record = PlayPurchaseRecord(
                cause: "RECONCILIATION", fetchedAt: Date(), kind: .subscription, packageName: packageName, productID: nil, purchaseToken: token,
                purchase: answer
            ).record(externalID: "reconcile:" + SHA256Hex.digest(of: Array(token.utf8) + Array(answer.readableBytesView)))
            record.origin = .reconciliation
            var report = RecoveryReport()
            try await store.store([record], dryRun: dryRun, into: &report)
            return .corrected
        }
        return .skipped
    }

    /// The token whose states move the entitlement now: the key's, or the last of the tokens that
    /// replaced it (`play_replaced_token` links), followed at most ten times.
    private func newestPlayToken(from token: String, environment: PurchaseEnvironment) async throws -> String {
        var token = token
        for _ in 0..<10 {
            var newer: String?
            for try await next in try await client.query(
                """
                SELECT transaction_key FROM provider_links
                WHERE kind = \(ProviderLink.Kind.playReplacedToken.rawValue) AND external_id = \(token)
                    AND scope = \(PlayDecider.linkScope(environment)) AND transaction_key IS NOT NULL
                """, logger: store.logger
            ).decode(String.self) {
                newer = next
            }
            guard let newer else { return token }
            token = newer
        }
        return token
    }

    static func hasEnded(_ status: EntitlementStatus) -> Bool {
        [.expired, .revoked, .refunded].contains(status)
    }

    static func sameTime(_ a: Date?, _ b: Date?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): abs(a.timeIntervalSince(b)) < 1
        default: false
        }
    }
}
