// SPDX-License-Identifier: Apache-2.0
public import Logging
public import PostgresNIO
import Synchronization
import Shared

/// Every write applying events makes, held back and sent in one statement
/// (`sluice_write_batch`, sql/functions/): the entitlement and transaction saves
/// (``HeldStateWrite``) and each event's call — its links, record, outgoing events and deliveries
/// (`sluice_write_applied_batch`'s argument, made by the worker's `OutgoingEventWriter`).
///
/// A ``StateStore`` owns one and sends it before any statement of its own (so every read sees what
/// was held), and its owner sends it before the event's `RELEASE SAVEPOINT` or `COMMIT`: a lone
/// event, a batch, a batch's savepoint retry and `worker rebuild` write through this one path.
/// The calls are sent in the order held, so outgoing events are numbered in the order the events
/// were applied; the transaction holds every row and lock they are about until it commits.
public final class HeldWrites: Sendable {
    private struct Contents {
        var states: [HeldStateWrite] = []
        var calls: [(eventID: Int64, argument: String)] = []
        var deliveries: [Int64: Int] = [:]
    }

    private let contents = Mutex(Contents())

    public init() {}

    /// Holds an entitlement's or a transaction's save, or a user assignment: sent before the calls
    /// (they touch other tables), in order as `[HeldStateWrite].hold(_:)` keeps them.
    public func hold(_ write: HeldStateWrite) {
        contents.withLock { $0.states.hold(write) }
    }

    /// Holds one element of `sluice_write_applied_batch`'s argument, made while applying the event
    /// of queue row `eventID`.
    public func hold(call argument: String, for eventID: Int64) {
        contents.withLock { $0.calls.append((eventID, argument)) }
    }

    /// Whether a user assignment of the entitlement `key`'s transactions is held: it changes rows
    /// the store may not hold, so a read of them must follow it to the database.
    public func holdsUserAssignment(ofEntitlement key: String) -> Bool {
        contents.withLock { contents in
            contents.states.contains { write in
                if case let .userAssignment(entitlementKey, _) = write { return entitlementKey == key }
                return false
            }
        }
    }

    /// Forgets what is held: its savepoint was rolled back, and the writes with it.
    public func discard() {
        contents.withLock { contents in (contents.states, contents.calls) = ([], []) }
    }

    /// How many deliveries the sent calls of the event of queue row `eventID` made.
    public func deliveries(of eventID: Int64) -> Int {
        contents.withLock { $0.deliveries[eventID] ?? 0 }
    }

    /// Sends what is held, in one statement; afterwards nothing is held.
    public func send(on connection: PostgresConnection, logger: Logger) async throws {
        let (states, calls) = contents.withLock { contents in
            defer { (contents.states, contents.calls) = ([], []) }
            return (contents.states, contents.calls)
        }
        guard !states.isEmpty || !calls.isEmpty else { return }
        let argument = "[" + calls.map(\.argument).joined(separator: ",") + "]"
        let rows = try await connection.query(
            "SELECT sluice_write_batch(\(HeldStateWrite.argument(states))::jsonb, \(argument)::jsonb)", logger: logger)
        var counts: [Int64] = []
        for try await row in rows.decode([Int64].self) { counts = row }
        guard counts.count == calls.count else {
            throw StateStoreError(reason: "sluice_write_batch answered \(counts.count) counts for \(calls.count) calls")
        }
        contents.withLock { contents in
            for (call, count) in zip(calls, counts) { contents.deliveries[call.eventID, default: 0] += Int(count) }
        }
    }
}
