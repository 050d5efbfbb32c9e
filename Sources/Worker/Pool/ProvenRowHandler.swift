// SPDX-License-Identifier: Apache-2.0
import Apply
import Foundation
import PostgresNIO
import Shared

/// Applies an events row only when Sluice stored it (``EventProof``, `EVENT_SIGNING_KEY`): it
/// carries a valid proof. Rows stored before the worker first ran with the key were given one
/// then (``ProofBackfill``); nothing about a row's id, state or time exempts it. Anything else
/// fails its attempts and is dead-lettered, with the reason in its history, never applied.
final class ProvenRowHandler: BatchableJobHandler {
    let inner: any BatchableJobHandler
    let proof: EventProof

    init(_ inner: any BatchableJobHandler, proof: EventProof) {
        self.inner = inner
        self.proof = proof
    }

    func applyAnnouncing(_ job: ClaimedJob, in store: StateStore) async throws -> AppliedEvent {
        if let refusal = proof.refusal(of: job) { throw refusal }
        return try await inner.applyAnnouncing(job, in: store)
    }

    /// Only a row that carries a valid proof has its reads loaded ahead: nothing of a forged row
    /// chooses what the batch locks or loads.
    func linksToPrefetch(for job: ClaimedJob, in store: StateStore) -> [PrefetchedRows.LinkKey] {
        proof.refusal(of: job) == nil ? inner.linksToPrefetch(for: job, in: store) : []
    }

    func rowsToPrefetch(for job: ClaimedJob, in store: StateStore) async throws -> PrefetchedRows.Plan {
        proof.refusal(of: job) == nil ? try await inner.rowsToPrefetch(for: job, in: store) : .init()
    }

    func didCommit(_ job: ClaimedJob, _ applied: AppliedEvent) {
        inner.didCommit(job, applied)
    }
}

/// Why a stored row is not applied: it was not stored by Sluice.
struct UnprovenRow: Error, CustomStringConvertible {
    var reason: String
    var description: String { "not applied: \(reason) (EVENT_SIGNING_KEY); the row was not stored by Sluice" }
}

extension EventProof {
    /// Why `job`'s row may not be applied, or `nil` when it carries a valid proof. The pool
    /// (``ProvenRowHandler``) and the rebuild (``EntityRebuilder``) ask the same question.
    func refusal(of job: ClaimedJob) -> UnprovenRow? {
        // bytea as text: \x and 64 hex digits.
        guard let text = job.proof else { return UnprovenRow(reason: "it carries no proof") }
        guard text.hasPrefix("\\x"), let presented = SHA256Hex.bytes(text.dropFirst(2)),
            verifies(
                presented, source: job.kind, externalID: job.externalID ?? "", type: job.eventType ?? "",
                origin: job.origin ?? "", payload: job.payload)
        else { return UnprovenRow(reason: "its proof does not match") }
        return nil
    }
}
