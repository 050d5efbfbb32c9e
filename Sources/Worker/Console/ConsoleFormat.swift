// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How the console writes times, ages and money.
enum ConsoleFormat {
    /// `2026-11-25 01:02:03Z`: RFC 3339 in UTC, with a space for reading.
    static func time(_ date: Date?) -> String {
        guard let date else { return "–" }
        return date.formatted(.iso8601).replacingOccurrences(of: "T", with: " ")
    }

    /// `42 s`, `7 min`, `3.5 h`, `2.0 d`.
    static func age(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: "0 s"
        case ..<120: "\(Int(seconds)) s"
        case ..<7_200: "\(Int(seconds / 60)) min"
        case ..<172_800: String(format: "%.1f h", seconds / 3_600)
        default: String(format: "%.1f d", seconds / 86_400)
        }
    }

    /// Minor units with their currency: `9.99 USD`; `–` when unknown.
    static func amount(_ minorUnits: Int64?, currency: String?) -> String {
        guard let minorUnits else { return "–" }
        return String(format: "%.2f", Double(minorUnits) / 100) + (currency.map { " " + $0.uppercased() } ?? "")
    }
}
