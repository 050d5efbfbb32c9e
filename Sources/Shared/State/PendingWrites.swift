// SPDX-License-Identifier: Apache-2.0

/// Writes held back inside a transaction to be sent together later (a batch's records and
/// announcements, the worker's `AppliedWritesBuffer`): they touch provider links, event records,
/// outgoing events and deliveries, none of which the rest of applying reads, except links.
///
/// A ``StateStore`` given pending writes sends them (``flush()``) before any statement that reads
/// or writes provider links or event records, so every statement sees the database as it would
/// have been had they been written at once.
public protocol PendingWrites: Sendable {
    /// Sends what is held, in the order it was added; afterwards nothing is held.
    func flush() async throws
}
