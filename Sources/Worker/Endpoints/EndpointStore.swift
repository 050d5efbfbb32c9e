// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import Logging
import PostgresNIO
import Shared

/// Reads and changes `endpoints`: what `worker endpoints …` does, what the forwarder reads for
/// each delivery (so running workers see a change at their next delivery), and how
/// `FORWARD_TARGETS` becomes endpoints at start.
struct EndpointStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    static let columns = """
        id, url, description, secret, previous_secret, previous_secret_expires_at, event_types, sources, environment, raw_apple,
        allow_private, max_per_second, managed_by, disabled_at, disabled_reason, failing_since, created_at
        """

    /// What an operator sets when adding or updating an endpoint; `nil` leaves a value as it is.
    struct Changes: Sendable {
        var url: String?
        var description: String?
        var eventTypes: [String]?
        var sources: [String]?
        var environment: Endpoint.EnvironmentScope?
        var rawApple: Bool?
        var allowPrivate: Bool?
        /// `.some(nil)` removes the limit.
        var maxPerSecond: Int??
    }

    func add(url: String, changes: Changes, secret: String) async throws -> Endpoint {
        let rows = try await client.query(
            """
            INSERT INTO endpoints (url, description, secret, event_types, sources, environment, raw_apple, allow_private, max_per_second)
            VALUES (\(url), \(changes.description)::text, \(secret), \(changes.eventTypes ?? []), \(changes.sources ?? []),
                \((changes.environment ?? .all).rawValue), \(changes.rawApple ?? false), \(changes.allowPrivate ?? false),
                \(changes.maxPerSecond ?? nil)::integer)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        return try await Self.first(rows) ?? { throw StateStoreError(reason: "the endpoint's insert returned no row") }()
    }

    func all() async throws -> [Endpoint] {
        try await Self.decode(client.query("SELECT \(unescaped: Self.columns) FROM endpoints ORDER BY id", logger: logger))
    }

    func endpoint(_ id: Int64) async throws -> Endpoint? {
        try await Self.first(client.query("SELECT \(unescaped: Self.columns) FROM endpoints WHERE id = \(id)", logger: logger))
    }

    func update(_ id: Int64, _ changes: Changes) async throws -> Endpoint? {
        let limit: Int? = changes.maxPerSecond ?? nil
        let rows = try await client.query(
            """
            UPDATE endpoints SET
                url = COALESCE(\(changes.url)::text, url), description = COALESCE(\(changes.description)::text, description),
                event_types = COALESCE(\(changes.eventTypes)::text[], event_types), sources = COALESCE(\(changes.sources)::text[], sources),
                environment = COALESCE(\(changes.environment?.rawValue)::text, environment), raw_apple = COALESCE(\(changes.rawApple)::boolean, raw_apple),
                allow_private = COALESCE(\(changes.allowPrivate)::boolean, allow_private),
                max_per_second = CASE WHEN \(changes.maxPerSecond != nil) THEN \(limit)::integer ELSE max_per_second END,
                updated_at = now()
            WHERE id = \(id)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        return try await Self.first(rows)
    }

    /// Disables (with a reason) or enables an endpoint; enabling clears its failure run.
    func setDisabled(_ id: Int64, reason: String?) async throws -> Endpoint? {
        let rows = try await client.query(
            """
            UPDATE endpoints SET disabled_at = CASE WHEN \(reason)::text IS NULL THEN NULL ELSE COALESCE(disabled_at, now()) END,
                disabled_reason = \(reason)::text, failing_since = CASE WHEN \(reason)::text IS NULL THEN NULL ELSE failing_since END,
                updated_at = now()
            WHERE id = \(id)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        return try await Self.first(rows)
    }

    /// A new secret; the old one keeps signing for `grace` seconds.
    func rotateSecret(_ id: Int64, newSecret: String, graceSeconds: Double) async throws -> Endpoint? {
        let rows = try await client.query(
            """
            UPDATE endpoints SET previous_secret = secret,
                previous_secret_expires_at = now() + make_interval(secs => \(graceSeconds)),
                secret = \(newSecret), updated_at = now()
            WHERE id = \(id)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        return try await Self.first(rows)
    }

    /// Removes the endpoint and its deliveries that have not been sent.
    func remove(_ id: Int64) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                "DELETE FROM deliveries WHERE endpoint_id = \(id) AND state IN ('pending', 'dead')", logger: logger)
            var removed = false
            for try await _ in try await connection.query("DELETE FROM endpoints WHERE id = \(id) RETURNING id", logger: logger) {
                removed = true
            }
            return removed
        }
    }

    // MARK: Delivery outcomes

    /// A delivery succeeded: the endpoint's failure run ends.
    func recordSuccess(_ id: Int64) async throws {
        try await client.query(
            "UPDATE endpoints SET failing_since = NULL WHERE id = \(id) AND failing_since IS NOT NULL", logger: logger)
    }

    /// A delivery failed: the failure run starts now if none runs, and an endpoint failing for
    /// `disableAfter` seconds is disabled.
    ///
    /// - Returns: whether this failure disabled it.
    func recordFailure(_ id: Int64, disableAfter: Double) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE endpoints e SET failing_since = COALESCE(e.failing_since, now()),
                disabled_at = CASE WHEN e.disabled_at IS NULL AND e.failing_since <= now() - make_interval(secs => \(disableAfter))
                                   THEN now() ELSE e.disabled_at END,
                disabled_reason = CASE WHEN e.disabled_at IS NULL AND e.failing_since <= now() - make_interval(secs => \(disableAfter))
                                   THEN 'failing since ' || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                   ELSE e.disabled_reason END
            FROM (SELECT id, disabled_at FROM endpoints WHERE id = \(id)) old
            WHERE e.id = old.id
            RETURNING old.disabled_at IS NULL AND e.disabled_at IS NOT NULL
            """, logger: logger)
        for try await disabled in rows.decode(Bool.self) { return disabled }
        return false
    }

    // MARK: FORWARD_TARGETS

    /// Keeps the `FORWARD_TARGETS` endpoints in step with this process's settings: each target an
    /// enabled raw-Apple endpoint signed with `FORWARD_SECRET`; one no longer listed is disabled.
    func syncEnvironmentTargets(_ urls: [String], secret: String?) async throws {
        try await client.withTransaction(logger: logger) { connection in
            for url in urls {
                try await connection.query(
                    """
                    INSERT INTO endpoints (url, description, secret, raw_apple, managed_by)
                    VALUES (\(url), 'FORWARD_TARGETS', \(secret)::text, true, \(Endpoint.managedByEnvironment))
                    ON CONFLICT (url) WHERE managed_by = 'environment' DO UPDATE SET secret = EXCLUDED.secret,
                        disabled_at = CASE WHEN endpoints.disabled_reason = 'not in FORWARD_TARGETS' THEN NULL ELSE endpoints.disabled_at END,
                        disabled_reason = CASE WHEN endpoints.disabled_reason = 'not in FORWARD_TARGETS' THEN NULL ELSE endpoints.disabled_reason END,
                        updated_at = now()
                    """, logger: logger)
            }
            try await connection.query(
                """
                UPDATE endpoints SET disabled_at = now(), disabled_reason = 'not in FORWARD_TARGETS', updated_at = now()
                WHERE managed_by = 'environment' AND disabled_at IS NULL AND NOT (url = ANY(\(urls)))
                """, logger: logger)
        }
    }

    // MARK: Decoding

    private static func first(_ rows: PostgresRowSequence) async throws -> Endpoint? {
        try await decode(rows).first
    }

    private static func decode(_ rows: PostgresRowSequence) async throws -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for try await row in rows {
            let c = row.makeRandomAccess()
            endpoints.append(Endpoint(
                id: try c["id"].decode(Int64.self), url: try c["url"].decode(String.self),
                description: try c["description"].decode(String?.self), secret: try c["secret"].decode(String?.self),
                previousSecret: try c["previous_secret"].decode(String?.self),
                previousSecretExpiresAt: try c["previous_secret_expires_at"].decode(Date?.self),
                eventTypes: try c["event_types"].decode([String].self), sources: try c["sources"].decode([String].self),
                environment: Endpoint.EnvironmentScope(rawValue: try c["environment"].decode(String.self)) ?? .all,
                rawApple: try c["raw_apple"].decode(Bool.self), allowPrivate: try c["allow_private"].decode(Bool.self), maxPerSecond: try c["max_per_second"].decode(Int32?.self).map(Int.init),
                managedBy: try c["managed_by"].decode(String.self), disabledAt: try c["disabled_at"].decode(Date?.self),
                disabledReason: try c["disabled_reason"].decode(String?.self), failingSince: try c["failing_since"].decode(Date?.self),
                createdAt: try c["created_at"].decode(Date.self)))
        }
        return endpoints
    }
}

extension EndpointStore {
    /// What `resend` re-queues.
    struct ResendWindow: Sendable {
        var since: Date
        var until: Date?
        /// Only these types (empty: every type the endpoint takes).
        var types: [String] = []
        /// Only what this endpoint's deliveries of failed (dead or discarded).
        var failedOnly = false
    }

    /// Queues again, for `endpoint`, every event of the window it takes: a delivery it never had
    /// is made, a finished one (done, dead, discarded) goes back to pending with its attempts
    /// reset; one still pending or running is left as it is. Raw-Apple endpoints get the stored
    /// notifications of the window.
    ///
    /// - Returns: how many deliveries were queued (with `dryRun`, would be).
    func resend(_ endpoint: Endpoint, _ window: ResendWindow, dryRun: Bool) async throws -> Int {
        try await client.withTransaction(dryRun: dryRun, logger: logger) { connection in
            endpoint.rawApple
                ? try await resendNotifications(endpoint, window, on: connection)
                : try await resendEvents(endpoint, window, on: connection)
        }
    }

    private func resendEvents(_ endpoint: Endpoint, _ window: ResendWindow, on connection: PostgresConnection) async throws -> Int {
        try await count(connection.query(
            """
            INSERT INTO deliveries (event_id, outgoing_event_id, source, type, external_id, target, payload, endpoint_id, ordering_key, sequence)
            SELECT o.cause_event_id, o.id, o.provider, o.type, o.message_id, e.url, o.payload, e.id, o.ordering_key, o.sequence
            FROM outgoing_events o, endpoints e
            WHERE e.id = \(endpoint.id) AND o.created_at >= \(window.since) AND o.created_at < COALESCE(\(window.until)::timestamptz, 'infinity'::timestamptz)
              AND sluice_endpoint_takes(e, o.type, o.provider, o.environment)
              AND (cardinality(\(window.types)::text[]) = 0 OR o.type = ANY(\(window.types)))
              AND (NOT \(window.failedOnly) OR EXISTS (
                  SELECT 1 FROM deliveries d WHERE d.endpoint_id = e.id AND d.external_id = o.message_id AND d.state IN ('dead', 'discarded')))
            ORDER BY o.sequence
            ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO UPDATE SET
                state = 'pending', attempts = 0, run_at = now(), last_error = NULL, finished_at = NULL, updated_at = now()
            WHERE deliveries.state IN ('done', 'dead', 'discarded')
            RETURNING id
            """, logger: logger))
    }

    private func resendNotifications(_ endpoint: Endpoint, _ window: ResendWindow, on connection: PostgresConnection) async throws -> Int {
        try await count(connection.query(
            """
            INSERT INTO deliveries (event_id, source, type, external_id, target, payload, endpoint_id)
            SELECT ev.id, ev.source, ev.type, ev.external_id, e.url, ev.payload, e.id
            FROM events ev, endpoints e
            WHERE e.id = \(endpoint.id) AND ev.source = 'apple' AND ev.origin <> 'reconciliation' AND ev.state = 'done'
              AND ev.received_at >= \(window.since) AND ev.received_at < COALESCE(\(window.until)::timestamptz, 'infinity'::timestamptz)
              AND (e.environment = 'all' OR e.environment = lower(ev.environment))
              AND (cardinality(\(window.types)::text[]) = 0 OR ev.type = ANY(\(window.types)))
              AND (NOT \(window.failedOnly) OR EXISTS (
                  SELECT 1 FROM deliveries d WHERE d.endpoint_id = e.id AND d.external_id = ev.external_id AND d.state IN ('dead', 'discarded')))
            ORDER BY ev.id
            ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO UPDATE SET
                state = 'pending', attempts = 0, run_at = now(), last_error = NULL, finished_at = NULL, updated_at = now()
            WHERE deliveries.state IN ('done', 'dead', 'discarded')
            RETURNING id
            """, logger: logger))
    }

    private func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}
