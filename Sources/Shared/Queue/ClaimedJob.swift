// SPDX-License-Identifier: Apache-2.0
public import NIOCore

/// A job that a worker has dequeued and holds the lease of.
public struct ClaimedJob: Sendable, Identifiable {
    public let id: Int64
    public let queue: QueueName
    /// Picks the handler: the event source for events.
    public let kind: String
    /// This attempt's number, starting at 1; together with ``owner`` it is the lease token.
    public let attempt: Int
    /// The worker that holds the lease.
    public let owner: String
    public let payload: ByteBuffer
    /// The queue's other columns a handler needs (see ``QueueName``), such as a delivery's `target`.
    public let attributes: [String: String]

    public init(
        id: Int64, queue: QueueName, kind: String, attempt: Int, owner: String, payload: ByteBuffer, attributes: [String: String] = [:]
    ) {
        self.id = id
        self.queue = queue
        self.kind = kind
        self.attempt = attempt
        self.owner = owner
        self.payload = payload
        self.attributes = attributes
    }
}
