// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// One dead-lettered job as `worker dlq list` shows it.
public struct DeadLetter: Sendable, Codable, Equatable {
    public var id: String
    public var queue: String
    public var source: String
    public var type: String
    public var externalID: String
    public var attempts: Int
    public var lastError: String?
    public var failedAt: Date?

    enum CodingKeys: String, CodingKey {
        case id, queue, source, type, externalID = "external_id", attempts, lastError = "last_error", failedAt = "failed_at"
    }

    /// Every key, with `null` for what is unknown: scripts read a fixed shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(queue, forKey: .queue)
        try container.encode(source, forKey: .source)
        try container.encode(type, forKey: .type)
        try container.encode(externalID, forKey: .externalID)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(failedAt, forKey: .failedAt)
    }
}

/// Everything an operator may want about one queue row: `worker dlq show`, and each line of `worker dlq drain`.
///
/// Its JSON has the keys of ``DeadLetter`` and these.
public struct QueueItemDetail: Sendable, Encodable {
    /// What `dlq list` shows of the row.
    public var item: DeadLetter
    public var state: String
    public var receivedAt: Date
    /// The queue's own columns: an event's subtype, environment, time and ordering key; a delivery's target and event.
    public var summary: [String: String]
    /// The stored payload as text, when it is UTF-8 (it is JSON for every source).
    public var payload: String?
    /// The stored payload byte for byte.
    public var payloadBase64: String
    /// Every failed attempt, oldest first.
    public var history: [AttemptRecord]

    enum CodingKeys: String, CodingKey {
        case state, receivedAt = "received_at", summary, payload, payloadBase64 = "payload_base64", history
    }

    public func encode(to encoder: any Encoder) throws {
        try item.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state, forKey: .state)
        try container.encode(receivedAt, forKey: .receivedAt)
        try container.encode(summary, forKey: .summary)
        try container.encode(payload, forKey: .payload)
        try container.encode(payloadBase64, forKey: .payloadBase64)
        try container.encode(history, forKey: .history)
    }
}

/// One failed attempt of a job, from `queue_attempts`.
public struct AttemptRecord: Sendable, Codable, Equatable {
    public var attempt: Int
    public var worker: String?
    public var error: String
    public var httpStatus: Int?
    public var durationMilliseconds: Double?
    public var finishedAt: Date

    enum CodingKeys: String, CodingKey {
        case attempt, worker, error, httpStatus = "http_status", durationMilliseconds = "duration_ms", finishedAt = "finished_at"
    }

    /// Every key, with `null` for what is unknown: scripts read a fixed shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(worker, forKey: .worker)
        try container.encode(error, forKey: .error)
        try container.encode(httpStatus, forKey: .httpStatus)
        try container.encode(durationMilliseconds, forKey: .durationMilliseconds)
        try container.encode(finishedAt, forKey: .finishedAt)
    }
}

/// Which dead items an operator command takes.
public struct DeadLetterFilter: Sendable {
    public var queues: [QueueName]
    /// `stripe`, `apple` or `storekit`.
    public var source: EventSource?
    /// A provider event type: `charge.refunded`, `DID_RENEW`.
    public var type: String?
    /// Only items that died at or after this time.
    public var since: Date?

    public init(queues: [QueueName] = QueueName.all, source: EventSource? = nil, type: String? = nil, since: Date? = nil) {
        self.queues = queues
        self.source = source
        self.type = type
        self.since = since
    }
}
