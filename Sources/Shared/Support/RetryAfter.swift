// SPDX-License-Identifier: Apache-2.0
public import Foundation

/// Reads a `Retry-After` header (RFC 9110): delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// The delay in seconds, between 0 and `maximum`; `nil` when the value is neither form.
    public static func seconds(_ value: String, now: Date = Date(), maximum: Double) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text), seconds.isFinite {
            return min(max(seconds, 0), maximum)
        }
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = format.date(from: text) else { return nil }
        return min(max(date.timeIntervalSince(now), 0), maximum)
    }
}
