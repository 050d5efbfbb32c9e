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

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/dead-letters") { request, context in
            let fields = FormFields(request.uri.query ?? "")
            var values: [String: Any] = [:]
            var items: [DeadLetter] = []
            do {
                let filter = try Self.filter(fields)
                items = try await services.deadLetters.list(filter, limit: Self.listLimit)
            } catch let error as FilterError {
                values["filterError"] = error.message
            }
            values["items"] = items.map { item -> [String: Any] in
                [
                    "id": item.id, "queue": item.queue, "number": item.id.split(separator: "/").last.map(String.init) ?? "",
                    "source": item.source, "type": item.type, "attempts": item.attempts, "failedAt": ConsoleFormat.time(item.failedAt),
                    "lastError": item.lastError ?? "",
                ]
            }
            values["hasItems"] = !items.isEmpty
            values["count"] = items.count
            values["filtered"] = Self.filterFields(fields).contains { !$0.value.isEmpty }
            values["filterFields"] = Self.filterFields(fields).map { ["name": $0.name, "value": $0.value] }
            values["type"] = fields["type"] ?? ""
            values["since"] = fields["since"] ?? ""
            values["queueOptions"] = QueueName.all.map { ["value": $0.rawValue, "selected": fields["queue"] == $0.rawValue] as [String: Any] }
            values["sourceOptions"] = EventSource.allCases.map { ["value": $0.rawValue, "selected": fields["source"] == $0.rawValue] as [String: Any] }
            return renderer.page("dead-letters", title: "Dead letters", section: .deadLetters, request: request, context: context, values: values)
        }

        router.get("/dead-letters/:queue/:id") { request, context in
            guard let item = Self.item(context) else { throw HTTPError(.notFound) }
            guard let detail = try await services.deadLetters.detail(item) else { throw HTTPError(.notFound) }
            return renderer.page(
                "dead-letter", title: item.description, section: .deadLetters, request: request, context: context,
                values: Self.values(detail, item: item))
        }

        router.post("/dead-letters/:queue/:id/replay") { request, context in
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

        router.post("/dead-letters/:queue/:id/discard") { request, context in
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

        for (action, verb) in [("replay", "Replay"), ("discard", "Discard")] {
            router.post("/dead-letters/\(action)") { request, context in
                let filter: DeadLetterFilter
                do { filter = try Self.filter(context.form) } catch let error as FilterError {
                    return ConsoleRenderer.redirect("/dead-letters", notice: error.message)
                }
                let back = "/dead-letters?" + FormFields.encode(Self.filterFields(context.form).map { ($0.name, $0.value) })
                guard context.form["confirm"] == "yes" else {
                    let count = try await services.deadLetters.replayAll(filter, dryRun: true).replayed.count
                    return renderer.confirmation(request, context, section: .deadLetters, action: "/dead-letters/\(action)",
                        question: "\(verb) \(count) dead item\(count == 1 ? "" : "s") matching these filters?",
                        button: "\(verb) \(count)", back: back, fields: Self.filterFields(context.form))
                }
                let count: Int
                if action == "replay" {
                    count = try await services.deadLetters.replayAll(filter, dryRun: false).replayed.count
                } else {
                    // `worker dlq drain` without an output: the rows stay stored, marked discarded.
                    count = try await services.deadLetters.drain(filter) { _ in }
                }
                context.logger.notice("console \(action) all", metadata: ["count": "\(count)", "operator_key": "\(Self.operatorKey(context))"])
                return ConsoleRenderer.redirect(back, notice: "\(verb == "Replay" ? "Replayed" : "Discarded") \(count)")
            }
        }
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

    static func filterFields(_ fields: FormFields) -> [(name: String, value: String)] {
        ["queue", "source", "type", "since"].map { ($0, fields[$0] ?? "") }
    }

    static func item(_ context: ConsoleRequestContext) -> QueueItemID? {
        guard let queue = context.parameters.get("queue").flatMap(QueueName.init(named:)),
            let id = context.parameters.get("id").flatMap(Int64.init), id > 0
        else { return nil }
        return QueueItemID(queue: queue, id: id)
    }

    static func path(_ item: QueueItemID) -> String { "/dead-letters/\(item.queue.rawValue)/\(item.id)" }

    static func operatorKey(_ context: ConsoleRequestContext) -> Int { (context.session?.keyIndex ?? -1) + 1 }

    static func values(_ detail: QueueItemDetail, item: QueueItemID) -> [String: Any] {
        let payload = detail.payload.map(Self.pretty) ?? "(not UTF-8; base64) " + detail.payloadBase64
        return [
            "state": detail.state, "stateClass": detail.state == "dead" ? "bad" : (detail.state == "done" ? "good" : "warn"),
            "isDead": detail.state == "dead", "queue": item.queue.rawValue, "number": item.id, "source": detail.item.source,
            "type": detail.item.type, "externalID": detail.item.externalID, "receivedAt": ConsoleFormat.time(detail.receivedAt),
            "attempts": detail.item.attempts, "failedAt": detail.item.failedAt.map { ConsoleFormat.time($0) } ?? "",
            "lastError": detail.item.lastError ?? "",
            "summary": detail.summary.sorted { $0.key < $1.key }.map { ["key": $0.key, "value": $0.value] },
            "history": detail.history.map { attempt -> [String: Any] in
                [
                    "attempt": attempt.attempt, "finishedAt": ConsoleFormat.time(attempt.finishedAt), "worker": attempt.worker ?? "",
                    "httpStatus": attempt.httpStatus.map(String.init) ?? "", "error": attempt.error,
                    "duration": attempt.durationMilliseconds.map { String(format: "%.0f", $0) } ?? "",
                ]
            },
            "hasHistory": !detail.history.isEmpty,
            "claims": detail.payload.flatMap(JWSClaims.decoded) ?? "",
            "payload": payload,
        ]
    }

    /// JSON indented for reading; anything else as it is.
    static func pretty(_ text: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}
