// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Shared

/// ``DatabaseReachability``'s decisions as a table: the first probe is always told, then only
/// changes — one line when an outage starts, one when it ends.
struct DatabaseReachabilityStateMachineTests {
    typealias Machine = DatabaseReachability.StateMachine

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// (reachable, at) of each probe, in order.
        var probes: [(Bool, Double)]
        var announced: [Machine.Announcement?]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "reached at start is said once", probes: [(true, 0), (true, 5), (true, 10)], announced: [.reached, nil, nil]),
        Row(name: "unreachable at start is said once", probes: [(false, 0), (false, 5), (false, 10)], announced: [.unreachable, nil, nil]),
        Row(name: "an outage is one line when it starts and one when it ends, with its length",
            probes: [(true, 0), (false, 5), (false, 10), (false, 15), (true, 20), (true, 25)],
            announced: [.reached, .lost, nil, nil, .back(after: 15), nil]),
        Row(name: "unreachable at start, then back", probes: [(false, 0), (true, 7)], announced: [.unreachable, .back(after: 7)]),
        Row(name: "two outages are two pairs of lines", probes: [(true, 0), (false, 1), (true, 2), (false, 3), (true, 5)],
            announced: [.reached, .lost, .back(after: 1), .lost, .back(after: 2)]),
    ]

    @Test(arguments: rows)
    func announces(_ row: Row) {
        var machine = Machine()
        let announced = row.probes.map { machine.probed(reachable: $0.0, at: $0.1) }
        #expect(announced == row.announced)
    }
}
