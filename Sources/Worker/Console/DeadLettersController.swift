// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import Shared

/// `/dead-letters`: the list (filtered by queue, source, type and time), one item, and replay and
/// discard — through ``DeadLetters``, as `worker dlq` does — each confirmed first.
struct DeadLettersController: Sendable {
    static let listLimit = 200

    let services: ConsoleServices
    let renderer: ConsoleRenderer

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        let deadLetters = router.group("dead-letters")
        deadLetters.get(use: list)
        deadLetters.get(":queue/:id", use: show)
        deadLetters.post(":queue/:id/replay", use: replay)
        deadLetters.post(":queue/:id/discard", use: discard)
        deadLetters.post("replay", use: replayAll)
        deadLetters.post("discard", use: discardAll)
    }

    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let fields = FormFields(request.uri.query ?? "")
        var items: [DeadLetter] = []
        var filterError: String?
        do {
            items = try await services.deadLetters.list(try Self.filter(fields), limit: Self.listLimit)
        } catch let error as FilterError {
            filterError = error.message
        }
        return renderer.page(
            DeadLetterListPage(items: items, fields: fields, filterError: filterError), title: "Dead letters", section: .deadLetters,
            request: request, context: context)
    }

    @Sendable func show(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let item = Self.item(context) else { throw HTTPError(.notFound) }
        guard let detail = try await services.deadLetters.detail(item) else { throw HTTPError(.notFound) }
        return renderer.page(
            DeadLetterPage(detail, item: item), title: item.description, section: .deadLetters, request: request, context: context)
    }

    @Sendable func replay(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let item = Self.item(context) else { throw HTTPError(.notFound) }
        guard context.form["confirm"] == "yes" else {
            return renderer.confirmation(request, context, section: .deadLetters, action: "/dead-letters/\(item.queue.rawValue)/\(item.id)/replay",
                question: "Replay \(item)? It goes back to its queue with its attempts reset.", button: "Replay", back: Self.path(item))
        }
        let result = try await services.deadLetters.replay([item], dryRun: false)
        context.logger.notice("console replayed", metadata: ["item": "\(item)", "operator_key": "\(Self.operatorKey(context))"])
        let notice = result.replayed.isEmpty ? "\(item) was not dead: left as it is" : "Replayed \(item)"
        return ConsoleRenderer.redirect("/dead-letters?queue=\(item.queue.rawValue)", notice: notice)
    }

    @Sendable func discard(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let item = Self.item(context) else { throw HTTPError(.notFound) }
        guard context.form["confirm"] == "yes" else {
            return renderer.confirmation(request, context, section: .deadLetters, action: "/dead-letters/\(item.queue.rawValue)/\(item.id)/discard",
                question: "Discard \(item)? It stays stored, marked discarded, and is never applied.", button: "Discard",
                back: Self.path(item))
        }
        let discarded = try await services.deadLetters.discard([item])
        context.logger.notice("console discarded", metadata: ["item": "\(item)", "operator_key": "\(Self.operatorKey(context))"])
        return ConsoleRenderer.redirect("/dead-letters?queue=\(item.queue.rawValue)", notice: discarded.isEmpty ? "\(item) was not dead: left as it is" : "Discarded \(item)")
    }

    @Sendable func replayAll(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await bulk(.replay, request, context: context)
    }

    @Sendable func discardAll(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await bulk(.discard, request, context: context)
    }

    /// What the bulk buttons do to every dead letter the filters match.
    enum BulkAction: String {
        case replay, discard

        var verb: String { self == .replay ? "Replay" : "Discard" }
        var done: String { self == .replay ? "Replayed" : "Discarded" }
    }

    /// A bulk action on the dead letters the posted filters match: counted and confirmed first.
    private func bulk(_ action: BulkAction, _ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let filter: DeadLetterFilter
        do { filter = try Self.filter(context.form) } catch let error as FilterError {
            return ConsoleRenderer.redirect("/dead-letters", notice: error.message)
        }
        let back = "/dead-letters?" + FormFields.encode(Self.filterFields(context.form).map { ($0.name, $0.value) })
        guard context.form["confirm"] == "yes" else {
            let count = try await services.deadLetters.replayAll(filter, dryRun: true).replayed.count
            return renderer.confirmation(request, context, section: .deadLetters, action: "/dead-letters/\(action.rawValue)",
                question: "\(action.verb) \(count) dead item\(count == 1 ? "" : "s") matching these filters?",
                button: "\(action.verb) \(count)", back: back, fields: Self.filterFields(context.form))
        }
        let count: Int
        switch action {
        case .replay: count = try await services.deadLetters.replayAll(filter, dryRun: false).replayed.count
        // `worker dlq drain` without an output: the rows stay stored, marked discarded.
        case .discard: count = try await services.deadLetters.drain(filter) { _ in }
        }
        context.logger.notice("console \(action.rawValue) all", metadata: ["count": "\(count)", "operator_key": "\(Self.operatorKey(context))"])
        return ConsoleRenderer.redirect(back, notice: "\(action.done) \(count)")
    }

    struct FilterError: Error { var message: String }

    /// The filter the list's form (or a bulk action's hidden fields) names.
    static func filter(_ fields: FormFields) throws -> DeadLetterFilter {
        var filter = DeadLetterFilter()
        if let queue = fields["queue"] {
            guard let name = QueueName(named: queue) else { throw FilterError(message: "unknown queue \(queue)") }
            filter.queues = [name]
        }
        if let source = fields["source"] {
            guard let value = EventSource(rawValue: source) else { throw FilterError(message: "unknown source \(source)") }
            filter.source = value
        }
        filter.type = fields["type"]
        if let since = fields["since"] {
            guard let date = TimeExpression.pointInTime(since) else {
                throw FilterError(message: "since must be RFC 3339 or a duration like 3d")
            }
            filter.since = date
        }
        return filter
    }

    static func filterFields(_ fields: FormFields) -> [HiddenField] {
        ["queue", "source", "type", "since"].map { HiddenField(name: $0, value: fields[$0] ?? "") }
    }

    static func item(_ context: ConsoleRequestContext) -> QueueItemID? {
        guard let queue = context.parameters.get("queue").flatMap(QueueName.init(named:)),
            let id = context.parameters.get("id").flatMap(Int64.init), id > 0
        else { return nil }
        return QueueItemID(queue: queue, id: id)
    }

    static func path(_ item: QueueItemID) -> String { "/dead-letters/\(item.queue.rawValue)/\(item.id)" }

    static func operatorKey(_ context: ConsoleRequestContext) -> Int { (context.session?.keyIndex ?? -1) + 1 }
}
