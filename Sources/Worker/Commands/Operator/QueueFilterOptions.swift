// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `--queue`, `--source`, `--type`, `--since`: which dead items a `dlq` command takes.
struct QueueFilterOptions: ParsableArguments {
    @Option(help: "Only this queue: events or deliveries (default: both).")
    var queue: String?

    @Option(help: "Only this source: stripe, apple, storekit, account, play or play_purchase.")
    var source: String?

    @Option(help: "Only this provider event type, such as charge.refunded or DID_RENEW.")
    var type: String?

    @Option(help: "Only items that died since then: RFC 3339 (2026-11-20T08:00:00Z) or a duration ago (90s, 30m, 2h, 7d, 2w).")
    var since: String?

    /// Whether any filter was given.
    var isFiltering: Bool { queue != nil || source != nil || type != nil || since != nil }

    func validate() throws {
        _ = try filter()
    }

    /// The filter these options name; usage errors (exit 2) for values that are not one.
    func filter(now: Date = Date()) throws -> DeadLetterFilter {
        var filter = DeadLetterFilter()
        filter.queues = try QueueOption.queues(named: queue)
        if let source {
            guard let value = EventSource(rawValue: source) else {
                throw ValidationError("--source must be one of: \(EventSource.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            filter.source = value
        }
        filter.type = type
        if let since {
            guard let date = TimeExpression.pointInTime(since, now: now) else {
                throw ValidationError("--since must be RFC 3339 (2026-11-20T08:00:00Z) or a duration like 2h")
            }
            filter.since = date
        }
        return filter
    }
}

/// `--queue` alone, for `pause` and `resume`.
struct QueueOption: ParsableArguments {
    @Option(help: "The queue: events or deliveries (default: both).")
    var queue: String?

    func validate() throws {
        _ = try queues()
    }

    func queues() throws -> [QueueName] {
        try Self.queues(named: queue)
    }

    /// The queue `name` names, or every queue for `nil`; a usage error (exit 2) for another name.
    static func queues(named name: String?) throws -> [QueueName] {
        guard let name else { return QueueName.all }
        guard let queue = QueueName(named: name) else {
            throw ValidationError("--queue must be one of: \(QueueName.all.map(\.rawValue).joined(separator: ", "))")
        }
        return [queue]
    }
}
