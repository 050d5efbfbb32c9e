// SPDX-License-Identifier: Apache-2.0

/// ISO 4217's minor unit of a currency: how many decimal digits its smallest unit has. The ledger
/// keeps every amount in that unit (`amount: 480` in `JPY` is ¥480, `999` in `USD` is $9.99,
/// `1250` in `KWD` is 1.250 KD), as Stripe's amounts already are; Apple's milliunits are converted
/// with ``minorUnits(fromMilliunits:)``.
///
/// The table is ISO 4217's list (amendment 179) of the currencies whose minor unit is not 2; every
/// other code, known or not, has 2.
public struct CurrencyMinorUnits: Sendable, Equatable {
    /// The upper-case ISO 4217 code.
    public let code: String
    /// Decimal digits of the minor unit: 0 for `JPY`, 2 for `USD`, 3 for `KWD`.
    public let digits: Int

    public init(_ code: String) {
        let code = code.uppercased()
        self.code = code
        self.digits = Self.exceptions[code] ?? 2
    }

    /// Currencies whose minor unit is not 2 digits.
    public static let exceptions: [String: Int] = [
        // No minor unit.
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
        "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        // Thousandths.
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        // Ten-thousandths (units of account).
        "CLF": 4, "UYW": 4,
    ]

    /// Minor units of an amount given in thousandths of the currency's major unit (Apple's `price`:
    /// `480000` in `JPY` is 480, `9990` in `USD` is 999, `1250` in `KWD` is 1250).
    public func minorUnits(fromMilliunits milliunits: Int64) -> Int64 {
        minorUnits(milliunits, givenIn: 3)
    }

    /// Minor units of an amount given with `givenDigits` decimal digits, rounded half away from
    /// zero when the minor unit is coarser than what was given.
    public func minorUnits(_ amount: Int64, givenIn givenDigits: Int) -> Int64 {
        if givenDigits <= digits {
            return (givenDigits..<digits).reduce(amount) { scaled, _ in scaled * 10 }
        }
        let divisor = (digits..<givenDigits).reduce(Int64(1)) { scaled, _ in scaled * 10 }
        let (quotient, remainder) = amount.quotientAndRemainder(dividingBy: divisor)
        guard remainder.magnitude * 2 >= divisor.magnitude else { return quotient }
        return quotient + (amount < 0 ? -1 : 1)
    }
}
