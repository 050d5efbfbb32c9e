// SPDX-License-Identifier: Apache-2.0

/// Names one row of one queue for operators: `events/42`, `deliveries/7`.
///
/// Ids are per queue table, so the queue is part of the name. A bare number is accepted where it
/// is unambiguous (``DeadLetters/resolve(_:)``).
public struct QueueItemID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var queue: QueueName
    public var id: Int64

    public init(queue: QueueName, id: Int64) {
        self.queue = queue
        self.id = id
    }

    /// Parses `queue/id`; `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let queue = QueueName(named: String(parts[0])), let id = Int64(parts[1]), id > 0 else {
            return nil
        }
        self.init(queue: queue, id: id)
    }

    public var description: String { "\(queue.rawValue)/\(id)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.queue.rawValue, lhs.id) < (rhs.queue.rawValue, rhs.id)
    }
}
