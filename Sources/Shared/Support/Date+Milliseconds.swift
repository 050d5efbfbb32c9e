// SPDX-License-Identifier: Apache-2.0
public import Foundation

extension Date {
    /// This instant in whole milliseconds since 1970, rounded to the nearest: Apple's precision,
    /// and the one at which Sluice compares the times of one purchase.
    ///
    /// A `Date` read back from PostgreSQL is not always the `Date` that was saved: the database
    /// keeps microseconds since 2000, and the conversion each way may move the value by one unit
    /// in the last place, above or below. Compared as `Date`s, an expiry decoded from a payload
    /// and the same expiry read from its row differ about one millisecond in a hundred — enough
    /// for a refund to find its period "not in force" and leave the access on. Compared here,
    /// they are equal.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }
}
