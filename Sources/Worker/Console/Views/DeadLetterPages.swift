// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared

/// `/dead-letters`: the filter form, bulk replay and discard, and the matching dead letters.
struct DeadLetterListPage: ConsolePage {
    static let template = ConsoleTemplate.deadLetters

    struct Row: Sendable {
        var id: String
        var queue: String
        /// The job's number within its queue, for the item's path.
        var number: String
        var source: String
        var type: String
        var attempts: Int
        var failedAt: String
        var lastError: String
    }

    /// A `<select>` choice.
    struct Option: Sendable {
        var value: String
        var selected: Bool
    }

    var filterError: String?
    var items: [Row]
    var hasItems: Bool
    var count: Int
    /// Whether any filter is set (the empty list then says "match these filters").
    var filtered: Bool
    /// The filters again, as hidden fields of the bulk actions.
    var filterFields: [HiddenField]
    var type: String
    var since: String
    var queueOptions: [Option]
    var sourceOptions: [Option]

    init(items: [DeadLetter], fields: FormFields, filterError: String?) {
        self.filterError = filterError
        self.items = items.map { item in
            Row(
                id: item.id, queue: item.queue, number: item.id.split(separator: "/").last.map(String.init) ?? "", source: item.source,
                type: item.type, attempts: item.attempts, failedAt: ConsoleFormat.time(item.failedAt), lastError: item.lastError ?? "")
        }
        hasItems = !items.isEmpty
        count = items.count
        filterFields = DeadLettersController.filterFields(fields)
        filtered = filterFields.contains { !$0.value.isEmpty }
        type = fields["type"] ?? ""
        since = fields["since"] ?? ""
        queueOptions = QueueName.all.map { Option(value: $0.rawValue, selected: fields["queue"] == $0.rawValue) }
        sourceOptions = EventSource.allCases.map { Option(value: $0.rawValue, selected: fields["source"] == $0.rawValue) }
    }
}

/// `/dead-letters/{queue}/{id}`: one item with its payload, decoded Apple claims and every attempt.
struct DeadLetterPage: ConsolePage {
    static let template = ConsoleTemplate.deadLetter

    struct SummaryLine: Sendable {
        var key: String
        var value: String
    }

    struct Attempt: Sendable {
        var attempt: Int
        var finishedAt: String
        var worker: String
        var httpStatus: String
        var error: String
        var duration: String
    }

    var state: String
    var stateClass: String
    var isDead: Bool
    var queue: String
    var number: Int64
    var source: String
    var type: String
    var externalID: String
    var receivedAt: String
    var attempts: Int
    var failedAt: String?
    var lastError: String?
    var summary: [SummaryLine]
    var history: [Attempt]
    var hasHistory: Bool
    /// The JWS payloads inside, decoded for reading; `nil` when there are none.
    var claims: String?
    var payload: String

    init(_ detail: QueueItemDetail, item: QueueItemID) {
        state = detail.state
        stateClass = detail.state == "dead" ? "bad" : (detail.state == "done" ? "good" : "warn")
        isDead = detail.state == "dead"
        queue = item.queue.rawValue
        number = item.id
        source = detail.item.source
        type = detail.item.type
        externalID = detail.item.externalID
        receivedAt = ConsoleFormat.time(detail.receivedAt)
        attempts = detail.item.attempts
        failedAt = detail.item.failedAt.map { ConsoleFormat.time($0) }
        lastError = detail.item.lastError?.nonBlank
        summary = detail.summary.sorted { $0.key < $1.key }.map { SummaryLine(key: $0.key, value: $0.value) }
        history = detail.history.map { attempt in
            Attempt(
                attempt: attempt.attempt, finishedAt: ConsoleFormat.time(attempt.finishedAt), worker: attempt.worker ?? "",
                httpStatus: attempt.httpStatus.map(String.init) ?? "", error: attempt.error,
                duration: attempt.durationMilliseconds.map { String(format: "%.0f", $0) } ?? "")
        }
        hasHistory = !history.isEmpty
        claims = detail.payload.flatMap(JWSClaims.decoded)?.nonBlank
        payload = detail.payload.map(Self.pretty) ?? "(not UTF-8; base64) " + detail.payloadBase64
    }

    /// JSON indented for reading; anything else as it is.
    static func pretty(_ text: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}
