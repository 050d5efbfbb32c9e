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

    var rejectedCount: Int { rejected.values.reduce(0, +) }

    mutating func add(_ other: RecoveryReport) {
        found += other.found
        alreadyStored += other.alreadyStored
        stored += other.stored
        rejected.merge(other.rejected, uniquingKeysWith: +)
    }

    enum CodingKeys: String, CodingKey {
        case found, alreadyStored = "already_stored", stored, rejected
    }

    var text: String {
        var line = "found \(found), already stored \(alreadyStored), stored \(stored), rejected \(rejectedCount)"
        if !rejected.isEmpty {
            line += " (" + rejected.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
        }
        return line
    }
}
