// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A ledger row's currency amounts (`adjustments`, `applied`, `balances`, `shortfall`: a `jsonb`
/// object of whole numbers) read from the text PostgreSQL writes for them, `{"credits": 500,
/// "gems": -1}`.
///
/// Announcing a ledger row read three or four of these with `JSONDecoder`, a quarter of the
/// announcer's CPU (`perf` of a worker announcing 48,000 rows: ~4–5 µs an object;
/// Benchmarks/HISTORY.md, fifteenth session). This reads the one form PostgreSQL's `jsonb` output
/// has — `{`, then `"key": number` pairs joined by `, `, then `}` — and leaves any other text to
/// `JSONDecoder`: an escaped key, a fraction or exponent, a number outside `Int64`, other spacing,
/// a key repeated (or two keys Swift holds equal, as a precomposed and a decomposed `é`). So every
/// text gets the answer `JSONDecoder` gives (`CurrencyAmountsTextTests` compares the two, also on
/// what PostgreSQL writes for random objects).
public enum CurrencyAmountsText {
    /// The amounts `text` holds, as `JSONDecoder` reads `[String: Int64]`; throws when it throws.
    public static func decode(_ text: String) throws -> [String: Int64] {
        if let amounts = decodeAsPostgresWrites(text) { return amounts }
        return try JSONDecoder().decode([String: Int64].self, from: Data(text.utf8))
    }

    /// The amounts, when `text` is in the form PostgreSQL writes; `nil` for any other text.
    static func decodeAsPostgresWrites(_ text: String) -> [String: Int64]? {
        var text = text
        return text.withUTF8 { bytes -> [String: Int64]? in
            var reader = Reader(bytes: bytes)
            guard reader.take(UInt8(ascii: "{")) else { return nil }
            var amounts: [String: Int64] = [:]
            if reader.take(UInt8(ascii: "}")) { return reader.atEnd ? amounts : nil }
            while true {
                // `updateValue` answers the value the key had: a key repeated (as Swift compares
                // keys) is left to `JSONDecoder`, whose answer for it differs between versions.
                guard let key = reader.plainKey(), reader.take(UInt8(ascii: ":")), reader.take(UInt8(ascii: " ")),
                      let amount = reader.wholeNumber(), amounts.updateValue(amount, forKey: key) == nil
                else { return nil }
                if reader.take(UInt8(ascii: "}")) { return reader.atEnd ? amounts : nil }
                guard reader.take(UInt8(ascii: ",")), reader.take(UInt8(ascii: " ")) else { return nil }
            }
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// A quoted key with no escape and no control character in it.
        mutating func plainKey() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                guard bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 else { return nil }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let key = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            index += 1
            return key
        }

        /// An optional `-`, then digits with no leading zero, within `Int64`, followed by the `,` or
        /// `}` that must come next (a `.` or `e` there makes a number for `JSONDecoder`).
        mutating func wholeNumber() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            let start = index
            var magnitude: UInt64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let (times10, overflowed) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflowedAgain) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                guard !overflowed, !overflowedAgain else { return nil }
                magnitude = sum
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") || bytes[index] == UInt8(ascii: "}") else { return nil }
            if negative {
                guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
                return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
            }
            guard magnitude <= UInt64(Int64.max) else { return nil }
            return Int64(magnitude)
        }
    }
}
