// SPDX-License-Identifier: Apache-2.0

/// A position in PostgreSQL's write-ahead log (`pg_lsn`), as `pg_current_wal_lsn()` writes it:
/// two hexadecimal halves, `16/B374D848`.
struct WALPosition: Sendable, Comparable, Hashable, CustomStringConvertible {
    let value: UInt64

    init(_ value: UInt64) {
        self.value = value
    }

    /// `nil` for anything but `HEX/HEX` with halves of at most 8 digits.
    init?(_ text: String) {
        let halves = text.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, halves.allSatisfy({ (1...8).contains($0.count) }),
            let high = UInt64(halves[0], radix: 16), let low = UInt64(halves[1], radix: 16)
        else { return nil }
        value = high << 32 | low
    }

    static func < (a: Self, b: Self) -> Bool { a.value < b.value }

    var description: String { String(value >> 32, radix: 16, uppercase: true) + "/" + String(value & 0xFFFF_FFFF, radix: 16, uppercase: true) }
}
