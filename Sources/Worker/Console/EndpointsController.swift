// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import Shared

/// `/endpoints`: every endpoint with its health; one endpoint's recent deliveries; enable,
/// disable, resend a window (the count confirmed first) and rotate the secret (shown once) —
/// through ``EndpointStore``, as `worker endpoints` does. URLs show as `worker endpoints list`
/// shows them (no credentials, path or query).
struct EndpointsController: Sendable {
    static let deliveriesShown = 50
    static let rotationGrace: Double = 24 * 3_600

    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        let endpoints = router.group("endpoints")
        endpoints.get(use: list)
        endpoints.get(":id", use: show)
        endpoints.post(":id/disable", use: disable)
        endpoints.post(":id/enable", use: enable)
        endpoints.post(":id/rotate-secret", use: rotateSecret)
        endpoints.post(":id/resend", use: resend)
    }

    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let health = try await ConsoleOverview.endpointHealth(client: services.client, logger: context.logger)
        return renderer.page(EndpointListPage(health), title: "Endpoints", section: .endpoints, request: request, context: context)
    }

    @Sendable func show(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let endpoint = try await load(context)
        let health = try await ConsoleOverview.endpointHealth(client: services.client, logger: context.logger)
            .first { $0.endpoint.id == endpoint.id } ?? .init(endpoint: endpoint, waiting: 0, dead: 0)
        let deliveries = try await recentDeliveries(endpoint.id, logger: context.logger)
        return renderer.page(
            EndpointPage(endpoint, health: health, deliveries: deliveries), title: endpoint.name, section: .endpoints, request: request,
            context: context)
    }

    @Sendable func disable(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await switchDeliveries(on: false, request, context: context)
    }

    @Sendable func enable(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await switchDeliveries(on: true, request, context: context)
    }

    /// Enables or disables an endpoint, confirmed first; a disabled endpoint's deliveries wait.
    private func switchDeliveries(on enabled: Bool, _ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let endpoint = try await load(context)
        let (verb, done) = enabled ? ("Enable", "Enabled") : ("Disable", "Disabled")
        guard context.form["confirm"] == "yes" else {
            let question =
                enabled
                ? "Enable \(endpoint.name)? The deliveries that waited are sent at once."
                : "Disable \(endpoint.name)? Its deliveries wait, none is lost, until it is enabled again."
            return renderer.confirmation(
                request, context, section: .endpoints, action: "/endpoints/\(endpoint.id)/\(verb.lowercased())", question: question,
                button: verb, back: "/endpoints/\(endpoint.id)")
        }
        _ = try await services.endpoints.setDisabled(endpoint.id, reason: enabled ? nil : "by an operator")
        context.logger.notice(
            "console \(done.lowercased()) an endpoint",
            metadata: ["endpoint": "\(endpoint.name)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
        let notice = enabled ? "Enabled \(endpoint.name)" : "Disabled \(endpoint.name): running workers stop delivering to it within 5 seconds"
        return ConsoleRenderer.redirect("/endpoints/\(endpoint.id)", notice: notice)
    }

    @Sendable func rotateSecret(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let endpoint = try await load(context)
        guard context.form["confirm"] == "yes" else {
            return renderer.confirmation(
                request, context, section: .endpoints, action: "/endpoints/\(endpoint.id)/rotate-secret", question: "Give \(endpoint.name) a new secret? The old one keeps signing for 24 hours, so the receiver can switch.",
                button: "Rotate the secret", back: "/endpoints/\(endpoint.id)")
        }
        let secret = Endpoint.newSecret()
        _ = try await services.endpoints.rotateSecret(endpoint.id, newSecret: secret, graceSeconds: Self.rotationGrace)
        context.logger.notice("console rotated an endpoint's secret", metadata: ["endpoint": "\(endpoint.name)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
        return renderer.page(
            MessagePage(
                lines: ["Deliveries are now signed with this secret, and with the old one for 24 hours."], secret: secret,
                back: "/endpoints/\(endpoint.id)"),
            title: "New secret for \(endpoint.name)", section: .endpoints, request: request, context: context)
    }

    @Sendable func resend(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let endpoint = try await load(context)
        let back = "/endpoints/\(endpoint.id)"
        guard let sinceText = context.form["since"], let since = TimeExpression.pointInTime(sinceText) else {
            return ConsoleRenderer.redirect(back, notice: "Resend: since must be RFC 3339 or a duration like 3d")
        }
        var until: Date?
        if let untilText = context.form["until"] {
            guard let date = TimeExpression.pointInTime(untilText) else {
                return ConsoleRenderer.redirect(back, notice: "Resend: until must be RFC 3339 or a duration like 1h")
            }
            until = date
        }
        let window = EndpointStore.ResendWindow(since: since, until: until, failedOnly: context.form["failed_only"] == "yes")
        guard context.form["confirm"] == "yes" else {
            let count = try await services.endpoints.resend(endpoint, window, dryRun: true)
            return renderer.confirmation(
                request, context, section: .endpoints, action: "\(back)/resend",
                question: "Queue \(count) deliveries to \(endpoint.name) again, from \(ConsoleFormat.time(since)) to \(until.map { ConsoleFormat.time($0) } ?? "now")?",
                button: "Resend \(count)", back: back,
                fields: ["since", "until", "failed_only"].compactMap { name in context.form[name].map { HiddenField(name: name, value: $0) } })
        }
        let count = try await services.endpoints.resend(endpoint, window, dryRun: false)
        context.logger.notice("console resent", metadata: ["endpoint": "\(endpoint.name)", "count": "\(count)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
        return ConsoleRenderer.redirect(back, notice: "Queued \(count) deliveries again")
    }

    private func load(_ context: ConsoleRequestContext) async throws -> Endpoint {
        guard let id = context.parameters.get("id").flatMap(Endpoint.id(named:)), let endpoint = try await services.endpoints.endpoint(id)
        else { throw HTTPError(.notFound) }
        return endpoint
    }

    /// The newest deliveries to an endpoint, with the HTTP status of a done one's success or of a
    /// failed one's last attempt; latency is from
    /// the delivery's creation to its success.
    private func recentDeliveries(_ endpointID: Int64, logger: Logger) async throws -> [EndpointPage.DeliveryRow] {
        var rows: [EndpointPage.DeliveryRow] = []
        for try await (id, type, message, state, attempts, lastError, created, finished, answered) in try await services.client.query(
            """
            SELECT id, type, external_id, state, attempts, last_error, received_at, finished_at, http_status FROM deliveries
            WHERE endpoint_id = \(endpointID) ORDER BY id DESC LIMIT \(Self.deliveriesShown)
            """, logger: logger
        ).decode((Int64, String, String, String, Int32, String?, Date, Date?, Int16?).self) {
            rows.append(
                .init(
                    id: id, type: type, message: message, state: state,
                    stateClass: state == "done" ? "good" : (state == "dead" ? "bad" : "warn"), attempts: attempts,
                    lastError: lastError ?? "", created: ConsoleFormat.time(created),
                    latency: state == "done" ? finished.map { String(format: "%.0f ms", $0.timeIntervalSince(created) * 1_000) } ?? "" : "",
                    // The status the endpoint answered (sql/0028); deliveries done before it was kept read 2xx.
                    status: state == "done" ? answered.map(String.init) ?? "2xx" : ""))
        }
        var statuses: [Int64: Int32] = [:]
        for try await (job, status) in try await services.client.query(
            """
            SELECT DISTINCT ON (job_id) job_id, http_status FROM queue_attempts
            WHERE queue = 'deliveries' AND job_id = ANY(\(rows.map(\.id))) AND http_status IS NOT NULL ORDER BY job_id, attempt DESC
            """, logger: logger
        ).decode((Int64, Int32).self) { statuses[job] = status }
        for index in rows.indices where rows[index].state != "done" {
            if let status = statuses[rows[index].id] { rows[index].status = "\(status)" }
        }
        return rows
    }
}
