// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO

/// The `checkouts` and `stripe_customers` tables (sql/0033): the single flight of checkout
/// creation, each checkout's Stripe ids, and its status read from what the worker applied.
public struct CheckoutStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A checkout asked for.
    public struct Request: Sendable {
        public var userID: String
        public var productID: String
        public var environment: PurchaseEnvironment
        public var kind: CheckoutKind
        public var terms: String
        /// How long after it is made the worker cancels it if nobody confirmed it.
        public var window: TimeInterval
        /// The user's subscription it replaces once paid.
        public var replacesSubscription: String?
        /// Who asks (``CheckoutRow/requester``): `nil` for a server key; for an app's client key,
        /// ``CheckoutStore/requester(idempotencyKey:)``.
        public var requester: String?

        public init(
            userID: String, productID: String, environment: PurchaseEnvironment, kind: CheckoutKind, terms: String, window: TimeInterval,
            replacesSubscription: String? = nil, requester: String? = nil
        ) {
            self.replacesSubscription = replacesSubscription
            self.requester = requester
            self.userID = userID
            self.productID = productID
            self.environment = environment
            self.kind = kind
            self.terms = terms
            self.window = window
        }
    }

    /// A client-key request's requester: the SHA-256 (hex) of its `Idempotency-Key`, or of a random
    /// value without one, so that only the same request repeated is handed the same checkout.
    public static func requester(idempotencyKey: String?) -> String {
        let key = idempotencyKey.map { "key:" + $0 } ?? "once:" + UUID().uuidString
        return SHA256Hex.digest(of: Data(key.utf8))
    }

    /// What this request does: make the Stripe objects of a row it now holds, answer a made one
    /// again, or wait for another request that is making them.
    public enum Claim: Sendable, Equatable {
        case make(CheckoutRow)
        case reuse(CheckoutRow)
        case wait
    }

    /// The status of a checkout and the entitlements it gave, from the worker's state.
    public struct Outcome: Sendable, Equatable {
        public var row: CheckoutRow
        public var status: CheckoutStatus
        public var entitlementKeys: [String]
    }

    /// Entitlement statuses that mean the checkout gave access (a trial set up counts).
    public static let grantingStatuses: [EntitlementStatus] = [.active, .trialing, .cancelled, .gracePeriod]

    /// Takes the user's slot for the product (``CheckoutSlot``), in one transaction holding the
    /// open row, so that concurrent requests through any ingest make one checkout.
    ///
    /// - Parameters:
    ///   - claimFor: how long this request may take to make the objects before another takes over.
    ///   - reuseWindow: how long a pending checkout is answered again.
    ///
    /// Times are the database's (`now()`), so ingest processes whose clocks differ agree on claims.
    public func claim(_ request: Request, claimFor: TimeInterval, reuseWindow: TimeInterval) async throws -> Claim {
        try await client.withTransaction(logger: logger) { connection in
            var now = Date()
            for try await time in try await connection.query("SELECT now()", logger: logger).decode(Date.self) { now = time }
            let open = try await CheckoutRow.decode(connection.query(
                """
                SELECT \(unescaped: CheckoutRow.columns) FROM checkouts
                WHERE user_id = \(request.userID) AND product_id = \(request.productID) AND environment = \(request.environment.rawValue)
                    AND state = 'open'
                FOR UPDATE
                """, logger: logger)).first
            var status: CheckoutStatus?
            if let open { status = try await self.outcome(of: open, on: connection).status }
            let action = CheckoutSlot.decide(
                open: open.map {
                    CheckoutSlot.Open(
                        terms: $0.terms, createdAt: $0.createdAt, claimedUntil: $0.claimedUntil, answered: $0.answered, status: status ?? .pending,
                        expiresAt: $0.expiresAt, mayBeHandedOver: request.requester == nil || request.requester == $0.requester)
                },
                terms: request.terms, now: now, reuseWindow: reuseWindow)
            switch action {
            case .wait:
                return .wait
            case .reuse:
                return .reuse(open!)
            case .takeOver:
                let until = now.addingTimeInterval(claimFor)
                try await connection.query(
                    "UPDATE checkouts SET claimed_until = \(until), updated_at = now() WHERE id = \(open!.id)", logger: logger)
                var row = open!
                row.claimedUntil = until
                return .make(row)
            case .release, .supersede:
                let state: CheckoutRowState = action == .release ? .released : .superseded
                try await connection.query(
                    "UPDATE checkouts SET state = \(state.rawValue), claimed_until = NULL, updated_at = now() WHERE id = \(open!.id)", logger: logger)
                return try await self.insert(request, claimedUntil: now.addingTimeInterval(claimFor), on: connection)
            case .create:
                return try await self.insert(request, claimedUntil: now.addingTimeInterval(claimFor), on: connection)
            }
        }
    }

    /// A new open row, or ``Claim/wait`` when a concurrent request inserted one first.
    private func insert(_ request: Request, claimedUntil: Date, on connection: PostgresConnection) async throws -> Claim {
        let rows = try await connection.query(
            """
            INSERT INTO checkouts (id, user_id, product_id, environment, kind, terms, claimed_until, expires_at, replaces_subscription, requester)
            VALUES (\(UUID()), \(request.userID), \(request.productID), \(request.environment.rawValue), \(request.kind.rawValue), \(request.terms),
                \(claimedUntil), now() + make_interval(secs => \(request.window)), \(request.replacesSubscription), \(request.requester))
            ON CONFLICT (user_id, product_id, environment) WHERE state = 'open' DO NOTHING
            RETURNING \(unescaped: CheckoutRow.columns)
            """, logger: logger)
        return try await CheckoutRow.decode(rows).first.map(Claim.make) ?? .wait
    }

    /// Stores the Stripe objects made for `id`: its answer, from now on given to every request.
    ///
    /// A maker that outlived its claim may answer a row already replaced or swept: its objects are
    /// stored all the same, and the sweep is made to look at the row again, so they are cancelled.
    public func answer(_ id: UUID, customer: String, objects: StripeCheckoutObjects) async throws {
        try await client.query(
            """
            UPDATE checkouts SET stripe_customer = \(customer), payment_intent = \(objects.paymentIntent), subscription = \(objects.subscription),
                invoice = \(objects.invoice), setup_intent = \(objects.setupIntent), checkout_session = \(objects.checkoutSession),
                client_secret = \(objects.clientSecret), checkout_url = \(objects.checkoutURL), claimed_until = NULL, updated_at = now(),
                cancelled_at = CASE WHEN state IN ('superseded', 'expired') THEN NULL ELSE cancelled_at END
            WHERE id = \(id)
            """, logger: logger)
    }

    /// Stripe did not answer (an outage, a timeout): the next request takes the row over at once
    /// and repeats the calls under the same `Idempotency-Key`s.
    public func unclaim(_ id: UUID) async throws {
        try await client.query(
            """
            UPDATE checkouts SET claimed_until = NULL, updated_at = now()
            WHERE id = \(id) AND client_secret IS NULL AND checkout_url IS NULL AND subscription IS NULL
            """,
            logger: logger)
    }

    /// Stripe refused to make it: the slot is free again, and the transaction reads `failed`.
    public func abandon(_ id: UUID) async throws {
        try await client.query(
            "UPDATE checkouts SET state = 'released', claimed_until = NULL, updated_at = now() WHERE id = \(id) AND state = 'open'", logger: logger)
    }

    /// The checkout `id` of `userID` (another user's reads as none), with its status.
    public func outcome(of id: UUID, userID: String? = nil) async throws -> Outcome? {
        try await client.withConnection { connection in
            let row = try await CheckoutRow.decode(connection.query(
                "SELECT \(unescaped: CheckoutRow.columns) FROM checkouts WHERE id = \(id) AND (\(userID)::text IS NULL OR user_id = \(userID))",
                logger: logger)).first
            guard let row else { return nil }
            return try await self.outcome(of: row, on: connection)
        }
    }

    /// The status of `row`: the transaction its Stripe ids are (or are linked to), and whether an
    /// entitlement they are linked to gives access (``CheckoutStatus/of(savesACardFirst:row:answered:transaction:entitlementIsLive:)``).
    func outcome(of row: CheckoutRow, on connection: PostgresConnection) async throws -> Outcome {
        let ids = row.stripeIDs
        guard !ids.isEmpty else {
            return Outcome(row: row, status: CheckoutStatus.of(savesACardFirst: row.savesACardFirst, row: row.state, answered: row.answered, transaction: nil, entitlementIsLive: false), entitlementKeys: [])
        }
        let kinds = ids.map(\.kind.rawValue)
        let externalIDs = ids.map(\.id)
        let granting = Self.grantingStatuses.map(\.rawValue)
        // Checkouts are made on the platform account, live or test: the two scopes without an account.
        let rows = try await connection.query(
            """
            WITH wanted(kind, external_id) AS (SELECT * FROM unnest(\(kinds)::text[], \(externalIDs)::text[])),
            linked AS (
                SELECT l.transaction_key, l.entitlement_key FROM provider_links l
                JOIN wanted w ON l.kind = w.kind AND l.scope IN ('', 'test:') AND l.external_id = w.external_id),
            found AS (
                SELECT status, entitlement_key, updated_at FROM transactions
                WHERE source = 'web_checkout' AND (provider_transaction_id = ANY(\(externalIDs)::text[])
                    OR provider_transaction_id IN (SELECT transaction_key FROM linked WHERE transaction_key IS NOT NULL))),
            keys AS (SELECT entitlement_key AS key FROM linked UNION SELECT entitlement_key FROM found)
            SELECT (SELECT status FROM found ORDER BY updated_at DESC LIMIT 1),
                ARRAY(SELECT e.entity_key FROM entitlements e WHERE e.entity_key IN (SELECT key FROM keys) ORDER BY e.entity_key),
                EXISTS (SELECT 1 FROM entitlements e WHERE e.entity_key IN (SELECT key FROM keys) AND e.status = ANY(\(granting)::text[]))
            """, logger: logger)
        var transaction: TransactionStatus?
        var keys: [String] = []
        var live = false
        for try await (status, entitlementKeys, granted) in rows.decode((String?, [String], Bool).self) {
            transaction = status.flatMap(TransactionStatus.init(rawValue:))
            keys = entitlementKeys
            live = granted
        }
        return Outcome(
            row: row, status: CheckoutStatus.of(savesACardFirst: row.savesACardFirst, row: row.state, answered: row.answered, transaction: transaction, entitlementIsLive: live),
            entitlementKeys: keys)
    }

    // MARK: Replacing a subscription

    /// The Stripe id of the user's live web subscription of another product whose product grants
    /// one of `levels`, newest first: what a new subscription granting the same access replaces
    /// once paid. `nil` when none, or when `levels` is empty.
    public func replaceable(
        forUser userID: String, productID: String, levels: Set<String>, grants: [String: Set<String>], in environment: PurchaseEnvironment
    ) async throws -> String? {
        let products = grants.filter { $0.key != productID && !$0.value.isDisjoint(with: levels) }.map(\.key)
        guard !levels.isEmpty, !products.isEmpty else { return nil }
        // A cancelled one ends by itself at its period's end: nothing to replace.
        let live = Self.grantingStatuses.filter { $0 != .cancelled }.map(\.rawValue)
        let rows = try await client.query(
            """
            SELECT l.external_id FROM entitlements e
            JOIN provider_links l ON l.kind = 'stripe_subscription' AND l.entitlement_key = e.entity_key AND l.scope IN ('', 'test:')
            WHERE e.user_id = \(userID) AND e.source = 'web_checkout' AND e.environment = \(environment.rawValue)
                AND e.product_id = ANY(\(products)::text[]) AND e.status = ANY(\(live)::text[])
            ORDER BY e.updated_at DESC LIMIT 1
            """, logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// Checkouts of this mode whose replacement of an older subscription is not settled yet.
    public func dueForReplacing(in environment: PurchaseEnvironment, limit: Int = 100) async throws -> [CheckoutRow] {
        try await CheckoutRow.decode(client.query(
            """
            SELECT \(unescaped: CheckoutRow.columns) FROM checkouts
            WHERE replaces_subscription IS NOT NULL AND replacement_settled_at IS NULL AND environment = \(environment.rawValue)
            ORDER BY created_at LIMIT \(limit)
            """, logger: logger))
    }

    /// The replacement of `id` is settled: the old subscription cancelled, or this checkout failed.
    public func settleReplacement(of id: UUID) async throws {
        try await client.query("UPDATE checkouts SET replacement_settled_at = now(), updated_at = now() WHERE id = \(id)", logger: logger)
    }

    // MARK: Customers

    /// The user's Stripe Customer in `environment`, if one was made.
    public func customer(of userID: String, in environment: PurchaseEnvironment) async throws -> String? {
        let rows = try await client.query(
            "SELECT customer_id FROM stripe_customers WHERE user_id = \(userID) AND environment = \(environment.rawValue)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// Keeps `customerID` as the user's; a customer stored first stays (both came from one
    /// `Idempotency-Key`, so they are the same one).
    public func saveCustomer(_ customerID: String, of userID: String, in environment: PurchaseEnvironment) async throws -> String {
        try await client.query(
            """
            INSERT INTO stripe_customers (user_id, environment, customer_id) VALUES (\(userID), \(environment.rawValue), \(customerID))
            ON CONFLICT (user_id, environment) DO NOTHING
            """, logger: logger)
        return try await customer(of: userID, in: environment) ?? customerID
    }

    // MARK: The worker's sweep

    /// Checkouts to cancel at Stripe: open ones past their window, and replaced ones not cancelled yet.
    public func dueForCancelling(in environment: PurchaseEnvironment, limit: Int = 100) async throws -> [CheckoutRow] {
        try await CheckoutRow.decode(client.query(
            """
            SELECT \(unescaped: CheckoutRow.columns) FROM checkouts
            WHERE cancelled_at IS NULL AND environment = \(environment.rawValue)
                AND ((state = 'open' AND expires_at <= now()) OR state IN ('superseded', 'expired'))
            ORDER BY expires_at LIMIT \(limit)
            """, logger: logger))
    }

    /// The status of a row the sweep holds, read as the app would.
    public func outcome(of row: CheckoutRow) async throws -> Outcome {
        try await client.withConnection { try await self.outcome(of: row, on: $0) }
    }

    /// Records that the sweep dealt with `id`: cancelled at Stripe (an open one becomes `expired`),
    /// or, when its payment was under way or done, released without cancelling.
    public func finishSweep(of id: UUID, cancelled: Bool) async throws {
        try await client.query(
            """
            UPDATE checkouts SET
                state = CASE WHEN state = 'open' THEN \(cancelled ? "expired" : "released") ELSE state END,
                cancelled_at = now(),
                claimed_until = NULL, updated_at = now()
            WHERE id = \(id)
            """, logger: logger)
    }
}
