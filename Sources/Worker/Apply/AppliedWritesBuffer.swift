// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared
import Synchronization

/// The `sluice_write_applied` calls of a batch applied without savepoints, held back and sent in
/// one statement (``OutgoingEventWriter/send(_:on:)-([Call],_)``, `sluice_write_applied_batch`)
/// instead of one per event: each event's links, record, outgoing events and deliveries.
///
/// The calls are sent in the order the events were applied, so outgoing events are numbered as
/// they would have been one by one; the batch holds every row and lock they are about until it
/// commits. The ``StateStore`` sends them earlier, before any statement that could see them
/// (``PendingWrites``). Sending fails the batch as one of its events' writes would: it is
/// applied again with a savepoint per event, each writing at once.
final class AppliedWritesBuffer: PendingWrites {
    private struct Contents {
        var pending: [(eventID: Int64, call: OutgoingEventWriter.Call)] = []
        var deliveries: [Int64: Int] = [:]
    }

    private let writer: OutgoingEventWriter
    private let connection: PostgresConnection
    private let contents = Mutex(Contents())

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.writer = OutgoingEventWriter(logger: logger)
    }

    /// Holds `call`, made while applying the event of queue row `eventID`.
    func add(_ call: OutgoingEventWriter.Call, for eventID: Int64) {
        contents.withLock { $0.pending.append((eventID, call)) }
    }

    func flush() async throws {
        let pending = contents.withLock { contents in
            defer { contents.pending = [] }
            return contents.pending
        }
        guard !pending.isEmpty else { return }
        let counts = try await writer.send(pending.map(\.call), on: connection)
        contents.withLock { contents in
            for (held, count) in zip(pending, counts) { contents.deliveries[held.eventID, default: 0] += count }
        }
    }

    /// How many deliveries the sent calls of the event of queue row `eventID` made.
    func deliveries(of eventID: Int64) -> Int {
        contents.withLock { $0.deliveries[eventID] ?? 0 }
    }
}
