// SPDX-License-Identifier: Apache-2.0
import Foundation

/// CPU time of a running process, read from `/proc` (Linux), for the benchmarks: on a shared,
/// noisy machine the CPU a process spends per unit of work varies less than its rate.
public enum ProcessCPU {
    /// User plus system CPU time the process has used so far, in seconds, or `nil` when it cannot be read.
    public static func seconds(pid: Int) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              // The command name, field 2, is in parentheses and may hold spaces: count fields after it.
              let end = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
