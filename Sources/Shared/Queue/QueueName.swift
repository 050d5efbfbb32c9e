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
    /// A fixed SQL condition a row must also meet to be dequeued (on top of `pending`, `run_at`
    /// and pauses), written against the queue's table by name.
    let runnableCondition: String
    /// Whether a done job keeps the HTTP status its successful attempt was answered with
    /// (`http_status`, sql/0028): deliveries do.
    public let recordsHTTPStatus: Bool

    /// Raw verified events waiting to be applied; the kind is the event's source.
    public static let events = QueueName(
        rawValue: "events", kindColumn: "source", attributeColumns: ClaimedJob.EventColumn.allCases.map(\.rawValue),
        summaryColumns: ["subtype", "environment", "event_time", "ordering_key"], runnableCondition: "true")

    /// Outgoing events and applied Apple notifications waiting to be sent to an endpoint; the kind
    /// is the provider, the attributes its `target` URL, `external_id` (the `webhook-id`) and
    /// `endpoint_id`.
    ///
    /// A delivery waits while its endpoint is disabled, and while an earlier delivery of the same
    /// entitlement to the same endpoint has not left (it is pending, backing off, or running).
    public static let deliveries = QueueName(
        rawValue: "deliveries", kindColumn: "source", attributeColumns: ClaimedJob.DeliveryColumn.allCases.map(\.rawValue),
        summaryColumns: ["target", "endpoint_id", "event_id"], recordsHTTPStatus: true,
        runnableCondition: """
            (deliveries.endpoint_id IS NULL OR (
                NOT EXISTS (SELECT 1 FROM endpoints WHERE endpoints.id = deliveries.endpoint_id AND endpoints.disabled_at IS NOT NULL)
                AND (deliveries.ordering_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM deliveries earlier
                    WHERE earlier.endpoint_id = deliveries.endpoint_id AND earlier.ordering_key = deliveries.ordering_key
                      AND earlier.state IN ('pending', 'running') AND earlier.sequence < deliveries.sequence))))
            """)

    /// Every queue, in the order operators see them.
    public static let all: [QueueName] = [.events, .deliveries]

    /// The queue with that name, or `nil`.
    public init?(named name: String) {
        guard let queue = Self.all.first(where: { $0.rawValue == name }) else { return nil }
        self = queue
    }

    private init(
        rawValue: String, kindColumn: String, attributeColumns: [String], summaryColumns: [String], recordsHTTPStatus: Bool = false,
        runnableCondition: String
    ) {
        self.rawValue = rawValue
        self.kindColumn = kindColumn
        self.attributeColumns = attributeColumns
        self.summaryColumns = summaryColumns
        self.recordsHTTPStatus = recordsHTTPStatus
        self.runnableCondition = runnableCondition
    }

    /// The LISTEN/NOTIFY channel that announces new jobs.
    public var notificationChannel: String { "sluice_\(rawValue)" }

    public var description: String { rawValue }
}
