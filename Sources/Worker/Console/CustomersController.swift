// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import Shared

/// `/customers` (look up by any id) and `/customer?id=…`: entitlements with `is_active` and why,
/// the ledger and the timeline (``CustomerStory``, as `worker customer` prints it); reconcile now,
/// and rebuild with a dry run first.
struct CustomersController: Sendable {
    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        router.group("customers").get(use: search)
        let customer = router.group("customer")
        customer.get(use: show)
        customer.post("reconcile", use: reconcile)
        customer.post("rebuild", use: rebuild)
    }

    @Sendable func search(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = FormFields(request.uri.query ?? "")["q"]
        var subjects: [CustomerSubject] = []
        if let query {
            subjects = try await CustomerLookup(client: services.client, logger: context.logger).find(query)
            if subjects.count == 1 { return ConsoleRenderer.redirect(Self.path(subjects[0])) }
        }
        return renderer.page(
            CustomerSearchPage(query: query, subjects: subjects), title: "Customers", section: .customers, request: request, context: context)
    }

    @Sendable func show(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let reference = FormFields(request.uri.query ?? "")["id"] else { return ConsoleRenderer.redirect("/customers") }
        let subject = CustomerSubject(reference: reference)
        guard let story = try await CustomerStory.load(
            subject, client: services.client, leeway: services.leeway, sandboxAccess: services.sandboxAccess,
            eventProof: services.eventProof, logger: context.logger)
        else {
            return ConsoleRenderer.redirect("/customers?" + FormFields.encode([("q", reference)]))
        }
        return renderer.page(CustomerPage(story, now: Date()), title: Self.title(subject), section: .customers, request: request, context: context)
    }

    @Sendable func reconcile(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let reference = context.form["id"] else { throw HTTPError(.badRequest) }
        let subject = CustomerSubject(reference: reference)
        guard let reconciler = services.reconciler else {
            return ConsoleRenderer.redirect(Self.path(subject), notice: "Reconciliation is off: set the App Store Server API key or STRIPE_API_KEY")
        }
        let candidates = try await Self.entityKeys(subject, services: services, context: context)
        let all = try await reconciler.candidates(entityKeys: candidates)
        guard context.form["confirm"] == "yes" else {
            return renderer.confirmation(
                request, context, section: .customers, action: "/customer/reconcile",
                question: "Ask the providers now for the state of \(all.count) purchase\(all.count == 1 ? "" : "s") of \(Self.title(subject)), and correct what differs?",
                button: "Reconcile \(all.count)", back: Self.path(subject), fields: [HiddenField(name: "id", value: reference)])
        }
        let report = try await reconciler.check(all, dryRun: false, logger: context.logger)
        context.logger.notice("console reconciled", metadata: ["entities": "\(all.count)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
        return ConsoleRenderer.redirect(Self.path(subject), notice: "Reconciled \(all.count): \(report.text)")
    }

    @Sendable func rebuild(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let reference = context.form["id"] else { throw HTTPError(.badRequest) }
        let subject = CustomerSubject(reference: reference)
        let dryRun = context.form["confirm"] != "yes"
        var changes: [EntityRebuilder.Change] = []
        for key in try await Self.entityKeys(subject, services: services, context: context) {
            changes.append(try await services.rebuilder.rebuild(key, dryRun: dryRun))
        }
        if !dryRun {
            context.logger.notice("console rebuilt", metadata: ["entities": "\(changes.count)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
        }
        return renderer.page(
            RebuildPage(changes, dryRun: dryRun, subject: reference), title: dryRun ? "Rebuild: dry run" : "Rebuilt", section: .customers,
            request: request, context: context)
    }

    static func path(_ subject: CustomerSubject) -> String { "/customer?" + FormFields.encode([("id", subject.reference)]) }

    static func title(_ subject: CustomerSubject) -> String {
        switch subject {
        case .user(let id): "Customer \(id)"
        case .entity(let key): "Purchase \(key)"
        }
    }

    /// The entitlements a subject's actions apply to.
    static func entityKeys(_ subject: CustomerSubject, services: ConsoleServices, context: ConsoleRequestContext) async throws -> [String] {
        switch subject {
        case .user(let id): try await services.rebuilder.entities(user: id)
        case .entity(let key): [key]
        }
    }
}
