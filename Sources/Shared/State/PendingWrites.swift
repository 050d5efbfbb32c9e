// SPDX-License-Identifier: Apache-2.0

/// Writes held back inside a transaction to be sent together later (the worker's
/// `AppliedWritesBuffer`, for a batch applied without savepoints): each event's records and
/// announcements — provider links, event records, outgoing events and deliveries — and the
/// entitlement and transaction saves whose rows the batch knows (``HeldStateWrite``).
///
/// A ``StateStore`` given pending writes sends them (``flush()``) before any statement that reads
/// or writes what they touch and is not answered from its ``PrefetchedRows`` (a link, entitlement
/// or transaction not loaded ahead, a bulk update, an event record), so every statement sees the
/// database as it would have been had they been written at once.
public protocol PendingWrites: Sendable {
    /// Holds an entitlement's or a transaction's save, or a user assignment, to be sent before
    /// the other held writes (they touch other tables, so the order between the two kinds does
    /// not matter); kept in order as `[HeldStateWrite].hold(_:)` keeps them.
    func hold(_ write: HeldStateWrite)

    /// Sends what is held, in the order it was added; afterwards nothing is held.
    func flush() async throws
}
