// SPDX-License-Identifier: Apache-2.0

/// The overview's chart of the last hour: per 5-minute bucket, a bar of finished jobs and one of
/// failed attempts, drawn as inline SVG on the server (no script; only numbers go into it).
struct ActivityChart: Sendable, Equatable {
    static let buckets = 12
    static let bucketSeconds = 300

    /// Jobs finished per bucket, oldest first.
    var done: [Int]
    /// Failed attempts per bucket, oldest first.
    var failed: [Int]

    /// Counts keyed by how many buckets ago (0: the last 5 minutes), as the query returns them.
    init(doneAgo: [Int: Int], failedAgo: [Int: Int]) {
        let order = (0..<Self.buckets).reversed()
        done = order.map { doneAgo[$0] ?? 0 }
        failed = order.map { failedAgo[$0] ?? 0 }
    }

    var svg: String {
        let width = 240, height = 100, slot = width / Self.buckets, bar = (slot - 4) / 2
        let top = max(1, (done + failed).max() ?? 1)
        var shapes = ["<line class=\"axis\" x1=\"0\" y1=\"\(height)\" x2=\"\(width)\" y2=\"\(height)\"/>"]
        for index in 0..<Self.buckets {
            let x = index * slot + 2
            for (offset, value, kind) in [(0, done[index], "done"), (bar, failed[index], "failed")] where value > 0 {
                let h = max(1, value * height / top)
                shapes.append(
                    "<rect class=\"\(kind)\" x=\"\(x + offset)\" y=\"\(height - h)\" width=\"\(bar)\" height=\"\(h)\"><title>\(value) \(kind)</title></rect>")
            }
        }
        return "<svg class=\"chart\" viewBox=\"0 0 \(width) \(height + 1)\" preserveAspectRatio=\"none\" role=\"img\" "
            + "aria-label=\"last hour: \(done.reduce(0, +)) done, \(failed.reduce(0, +)) failed attempts\">"
            + shapes.joined() + "</svg>"
    }
}
