// SPDX-License-Identifier: Apache-2.0

/// Host names that reach this machine only, where plain `http://` exposes nothing on the way.
public enum LoopbackHost {
    /// `localhost`, `127.0.0.0/8` and `::1` (bracketed or not).
    public static func contains(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
