// SPDX-License-Identifier: Apache-2.0
import Shared

/// Stripe's amounts in the ledger's unit, ISO 4217 minor units (``CurrencyMinorUnits``).
///
/// Stripe gives every amount "in the currency's smallest unit", which is ISO 4217's minor unit
/// for all but two currencies (Stripe's currencies guide): ISK stays two-decimal in Stripe's API
/// (`100` is 1 króna; ISO 4217 gives it no minor unit) and MGA is zero-decimal there (ISO 4217
/// gives it two digits).
enum StripeAmounts {
    /// Decimal digits of Stripe's amounts where they differ from ISO 4217's.
    static let stripeDigits: [String: Int] = ["ISK": 2, "MGA": 0]

    /// `amount`, in Stripe's unit of `currency`, in ISO 4217 minor units.
    static func minorUnits(_ amount: Int64, currency: String?) -> Int64 {
        guard let currency else { return amount }
        let iso = CurrencyMinorUnits(currency)
        return iso.minorUnits(amount, givenIn: stripeDigits[iso.code] ?? iso.digits)
    }
}

extension JSONValue {
    /// The first of `paths` that holds an amount, in ISO 4217 minor units of the object's `currency`.
    func stripeAmount(_ paths: String...) -> Int64? {
        guard let amount = paths.lazy.compactMap({ self[$0].int }).first else { return nil }
        return StripeAmounts.minorUnits(amount, currency: self["currency"].string)
    }
}
