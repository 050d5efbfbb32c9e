// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing

/// The time arguments of the operator commands: durations and RFC 3339.
struct TimeExpressionTests {
    @Test(arguments: [("90s", 90.0), ("30m", 1_800), ("2h", 7_200), ("7d", 604_800), ("2w", 1_209_600), ("1.5h", 5_400)])
    func durations(text: String, seconds: Double) {
        #expect(TimeExpression.seconds(text) == seconds)
    }

    @Test(arguments: ["", "h", "2", "2y", "-1h", "infh", "yesterday"])
    func notDurations(text: String) {
        #expect(TimeExpression.seconds(text) == nil)
    }

    @Test func pointsInTime() {
        let now = Date(timeIntervalSince1970: 1_784_000_000)
        #expect(TimeExpression.pointInTime("2h", now: now) == now.addingTimeInterval(-7_200))
        #expect(TimeExpression.pointInTime("2026-11-20T08:00:00Z", now: now) == Date(timeIntervalSince1970: 1_795_161_600))
        #expect(TimeExpression.pointInTime("2026-11-20T09:00:00+01:00", now: now) == Date(timeIntervalSince1970: 1_795_161_600))
        #expect(TimeExpression.pointInTime("2026-11-20T08:00:00.250Z", now: now) == Date(timeIntervalSince1970: 1_795_161_600.25))
        #expect(TimeExpression.pointInTime("20 Nov 2026", now: now) == nil)
    }
}
