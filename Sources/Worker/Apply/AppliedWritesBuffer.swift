// SPDX-License-Identifier: Apache-2.0
import Logging
import PostgresNIO
import Shared
import Synchronization

/// The writes of a batch applied without savepoints, held back and sent in one statement
/// (``OutgoingEventWriter/send(_:calls:on:)``, `sluice_write_batch`) instead of several per event:
/// the entitlement and transaction saves the batch knows the rows of (``HeldStateWrite``), then
/// each event's `sluice_write_applied` call — its links, record, outgoing events and deliveries.
///
/// The calls are sent in the order the events were applied, so outgoing events are numbered as
/// they would have been one by one; the batch holds every row and lock they are about until it
/// commits. The ``StateStore`` sends them earlier, before any statement that could see them
/// (``PendingWrites``). Sending fails the batch as one of its events' writes would: it is
/// applied again with a savepoint per event, each writing at once.
final class AppliedWritesBuffer: PendingWrites {
    private struct Contents {
        var states: [HeldStateWrite] = []
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

    func hold(_ write: HeldStateWrite) {
        contents.withLock { $0.states.hold(write) }
    }

    func flush() async throws {
        let (states, pending) = contents.withLock { contents in
            defer { (contents.states, contents.pending) = ([], []) }
            return (contents.states, contents.pending)
        }
        guard !states.isEmpty || !pending.isEmpty else { return }
        let counts = try await writer.send(states, calls: pending.map(\.call), on: connection)
        contents.withLock { contents in
            for (held, count) in zip(pending, counts) { contents.deliveries[held.eventID, default: 0] += count }
        }
    }

    /// How many deliveries the sent calls of the event of queue row `eventID` made.
    func deliveries(of eventID: Int64) -> Int {
        contents.withLock { $0.deliveries[eventID] ?? 0 }
    }
}
