// SPDX-License-Identifier: Apache-2.0

/// What one recovery run found and did (`worker recover` prints it).
struct RecoveryReport: Sendable, Equatable, Encodable {
    /// Events the provider listed in the window.
    var found = 0
    /// Of those, already in the queue (delivered by webhook, or recovered before).
    var alreadyStored = 0
    /// Newly stored (with `--dry-run`: would be stored).
    var stored = 0
    /// Refused by verification, by reason (`bad_signature`, `wrong_bundle`, …): never stored.
    var rejected: [String: Int] = [:]
    /// Purchase states fetched after listed partial refunds and stored beside them (Google Play:
    /// how many of a purchase were refunded), not counted as found.
    var statesFetched = 0

    var rejectedCount: Int { rejected.values.reduce(0, +) }

    mutating func add(_ other: RecoveryReport) {
        found += other.found
        alreadyStored += other.alreadyStored
        stored += other.stored
        rejected.merge(other.rejected, uniquingKeysWith: +)
        statesFetched += other.statesFetched
    }

    enum CodingKeys: String, CodingKey {
        case found, alreadyStored = "already_stored", stored, rejected, statesFetched = "states_fetched"
    }

    var text: String {
        var line = "found \(found), already stored \(alreadyStored), stored \(stored), rejected \(rejectedCount)"
        if !rejected.isEmpty {
            line += " (" + rejected.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
        }
        if statesFetched > 0 { line += "; states fetched after partial refunds \(statesFetched)" }
        return line
    }
}
