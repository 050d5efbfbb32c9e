// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Memory figures of a running process, read from `/proc` (Linux), for the benchmarks.
public enum ProcessMemory {
    /// The process's peak resident set size (`VmHWM`) in MiB, or `nil` when it cannot be read.
    public static func peakRSSMiB(pid: Int) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kib / 1024
    }
}
