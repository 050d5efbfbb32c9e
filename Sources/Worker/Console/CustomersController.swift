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

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/customers") { request, context in
            let query = FormFields(request.uri.query ?? "")["q"]
            var values: [String: Any] = ["query": query ?? "", "searched": query != nil]
            if let query {
                let subjects = try await CustomerLookup(client: services.client, logger: context.logger).find(query)
                if subjects.count == 1 { return ConsoleRenderer.redirect(Self.path(subjects[0])) }
                values["matches"] = subjects.map { subject -> [String: Any] in
                    let label: String
                    switch subject {
                    case .user(let id): label = "user \(id)"
                    case .entity(let key): label = "purchase \(key) (no user linked)"
                    }
                    return ["reference": FormFields.encode([("id", subject.reference)]).dropFirst(3), "label": label]
                }
                values["hasMatches"] = subjects.count > 1
            }
            return renderer.page("customers", title: "Customers", section: .customers, request: request, context: context, values: values)
        }

        router.get("/customer") { request, context in
            guard let reference = FormFields(request.uri.query ?? "")["id"] else { return ConsoleRenderer.redirect("/customers") }
            let subject = CustomerSubject(reference: reference)
            guard let story = try await CustomerStory.load(
                subject, client: services.client, leeway: services.leeway, sandboxAccess: services.sandboxAccess,
                eventProof: services.eventProof, logger: context.logger)
            else {
                return ConsoleRenderer.redirect("/customers?" + FormFields.encode([("q", reference)]))
            }
            return renderer.page(
                "customer", title: Self.title(subject), section: .customers, request: request, context: context,
                values: Self.values(story, now: Date()))
        }

        router.post("/customer/reconcile") { request, context in
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
                    button: "Reconcile \(all.count)", back: Self.path(subject), fields: [("id", reference)])
            }
            let report = try await reconciler.check(all, dryRun: false, logger: context.logger)
            context.logger.notice("console reconciled", metadata: ["entities": "\(all.count)", "operator_key": "\(DeadLettersController.operatorKey(context))"])
            return ConsoleRenderer.redirect(Self.path(subject), notice: "Reconciled \(all.count): \(report.text)")
        }

        router.post("/customer/rebuild") { request, context in
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
            let changed = changes.filter { !$0.differences.isEmpty }.count
            return renderer.page(
                "rebuild", title: dryRun ? "Rebuild: dry run" : "Rebuilt", section: .customers, request: request, context: context,
                values: [
                    "summary": (dryRun ? "Dry run, nothing changed yet: " : "Done: ") + "\(changes.count) entities, \(changed) "
                        + (dryRun ? "would change." : "changed."),
                    "changes": changes.map { ["entity": $0.entityKey, "events": $0.events, "differences": $0.differences] as [String: Any] },
                    "dryRun": dryRun, "anyChange": changed > 0, "subject": reference,
                    "subjectQuery": FormFields.encode([("id", reference)]).dropFirst(3),
                ])
        }
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

    static func values(_ story: CustomerStory, now: Date) -> [String: Any] {
        [
            "subject": story.subject,
            "entitlements": story.entitlements.map { body -> [String: Any] in
                let state = body.entitlement.state
                return [
                    "product": state.productID, "active": body.isActive ? "active" : "no access",
                    "activeClass": body.isActive ? "good" : "bad", "why": EntitlementExplanation.why(body, now: now),
                    "status": state.status.rawValue, "environment": state.environment.rawValue, "expires": ConsoleFormat.time(state.expiresAt),
                    "entity": state.entityKey,
                ]
            },
            "transactions": story.transactions.map { body -> [String: Any] in
                let state = body.transaction.state
                return [
                    "id": state.providerTransactionID, "product": state.productID ?? "–", "status": state.status.rawValue,
                    "amount": ConsoleFormat.amount(state.amount, currency: state.currency), "purchased": ConsoleFormat.time(state.purchasedAt),
                ]
            },
            "hasTransactions": !story.transactions.isEmpty,
            "timeline": story.timeline.map { entry -> [String: Any] in
                [
                    "time": ConsoleFormat.time(entry.time), "source": entry.source, "origin": entry.origin, "event": entry.event ?? "",
                    "eventPath": entry.event ?? "", "type": entry.type, "subtype": entry.subtype ?? "", "decision": entry.decision,
                    "detail": entry.detail ?? "",
                    "outgoing": entry.outgoing.map { out -> [String: Any] in
                        ["type": out.type, "sequence": out.sequence, "deliveries": out.deliveries.map { ["text": $0.text] }]
                    },
                ]
            },
        ]
    }
}
