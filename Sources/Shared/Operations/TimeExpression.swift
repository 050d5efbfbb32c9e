// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// The time arguments of the operator commands: a duration like `90s`, `30m`, `2h`, `7d`, `2w`,
/// or (for points in time) an RFC 3339 timestamp like `2026-11-20T08:00:00Z`.
public enum TimeExpression {
    private static let unitSeconds: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800]

    /// Seconds in a duration such as `2h`; `nil` when `text` is not one.
    public static func seconds(_ text: String) -> Double? {
        guard let unit = text.last, let multiplier = unitSeconds[unit],
              let amount = Double(text.dropLast()), amount.isFinite, amount >= 0
        else { return nil }
        return amount * multiplier
    }

    /// The point in time `text` names: an RFC 3339 timestamp, or a duration meaning that long before `now`.
    public static func pointInTime(_ text: String, now: Date = Date()) -> Date? {
        if let seconds = seconds(text) { return now.addingTimeInterval(-seconds) }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
