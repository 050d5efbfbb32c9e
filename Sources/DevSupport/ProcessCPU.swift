// SPDX-License-Identifier: Apache-2.0
import Foundation

/// CPU time of a running process, read from `/proc` (Linux), for the benchmarks: on a shared,
/// noisy machine the CPU a process spends per unit of work varies less than its rate.
public enum ProcessCPU {
    /// User plus system CPU time the process has used so far, in seconds, or `nil` when it cannot be read.
    public static func seconds(pid: Int) -> Double? {
        guard let fields = statFields(pid: pid), fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// ``seconds(pid:)`` plus the CPU time of the process's children that ended and were waited
    /// for: a PostgreSQL server's postmaster counts each backend's CPU this way once the
    /// connection closes.
    public static func secondsWithEndedChildren(pid: Int) -> Double? {
        guard let fields = statFields(pid: pid), fields.count > 14 else { return nil }
        let ticks = fields[11...14].compactMap { Double($0) }
        guard ticks.count == 4 else { return nil }
        return ticks.reduce(0, +) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The process's parent (a backend's is its postmaster), or `nil` when it cannot be read.
    public static func parent(of pid: Int) -> Int? {
        guard let fields = statFields(pid: pid), fields.count > 1 else { return nil }
        return Int(fields[1])
    }

    /// The fields of `/proc/<pid>/stat` after the command name: the state is the first, field 3.
    private static func statFields(pid: Int) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              // The command name, field 2, is in parentheses and may hold spaces: count fields after it.
              let end = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: end)...].split(separator: " ")
    }
}
