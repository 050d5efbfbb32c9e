// SPDX-License-Identifier: Apache-2.0

/// A queue table that ``JobQueue`` drives.
///
/// Every queue table has the same lifecycle columns (`state`, `attempts`, `run_at`, `locked_by`,
/// `locked_until`, `last_error`, `finished_at`, `updated_at`), a `payload`, a column that names
/// the job's kind, which picks its handler, and `source`, `type`, `external_id` for operators.
public struct QueueName: Sendable, Hashable, CustomStringConvertible {
    /// The queue's name, which is also its table's name.
    public let rawValue: String
    /// The column that holds the job kind.
    let kindColumn: String
    /// Text columns a handler needs besides the payload, handed over in ``ClaimedJob/attributes``.
    let attributeColumns: [String]
    /// The columns, besides the common ones, that describe a row to an operator (`worker dlq show`).
    let summaryColumns: [String]

    /// Raw verified events waiting to be applied; the kind is the event's source.
    public static let events = QueueName(
        rawValue: "events", kindColumn: "source", attributeColumns: [],
        summaryColumns: ["subtype", "environment", "event_time", "ordering_key"])

    /// Applied Apple notifications waiting to be forwarded to a target; the kind is the forwarded
    /// event's source, the attributes its `target` URL and `external_id` (the `webhook-id`).
    public static let deliveries = QueueName(
        rawValue: "deliveries", kindColumn: "source", attributeColumns: ["target", "external_id"],
        summaryColumns: ["target", "event_id"])

    /// Every queue, in the order operators see them.
    public static let all: [QueueName] = [.events, .deliveries]

    /// The queue with that name, or `nil`.
    public init?(named name: String) {
        guard let queue = Self.all.first(where: { $0.rawValue == name }) else { return nil }
        self = queue
    }

    private init(rawValue: String, kindColumn: String, attributeColumns: [String], summaryColumns: [String]) {
        self.rawValue = rawValue
        self.kindColumn = kindColumn
        self.attributeColumns = attributeColumns
        self.summaryColumns = summaryColumns
    }

    /// The LISTEN/NOTIFY channel that announces new jobs.
    public var notificationChannel: String { "sluice_\(rawValue)" }

    public var description: String { rawValue }
}
