// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import NIOCore

/// Addresses an endpoint may not reach unless it was added with `--allow-private`: loopback,
/// private (RFC 1918, unique local), link-local (which holds the clouds' metadata service,
/// `169.254.169.254`, `fd00:ec2::254`), carrier-grade NAT, "this network", multicast and reserved
/// ranges, and IPv6 forms that embed one of those IPv4 addresses (mapped, NAT64, 6to4).
enum PrivateAddress {
    /// Whether `text`, an IPv4 or IPv6 address, is one an endpoint may not reach; `nil` when it is
    /// not an address at all (a host name).
    static func isPrivate(_ text: String) -> Bool? {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        if let v4 = bytes(bare, family: AF_INET, count: 4) { return isPrivateV4(v4) }
        if let v6 = bytes(bare.split(separator: "%").first.map(String.init) ?? bare, family: AF_INET6, count: 16) { return isPrivateV6(v6) }
        return nil
    }

    /// Whether a connection's peer is one an endpoint may not reach (a peer with no IP address,
    /// a Unix socket, is).
    static func isPrivate(_ address: SocketAddress) -> Bool {
        guard let text = address.ipAddress else { return true }
        return isPrivate(text) ?? true
    }

    static func isPrivateV4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): true                        // this network, private, loopback
        case (100, 64...127): true                                  // carrier-grade NAT
        case (169, 254): true                                       // link-local, cloud metadata
        case (172, 16...31), (192, 168): true                       // private
        case (192, 0) where a[2] == 0 || a[2] == 2: true            // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): true                                   // benchmarking
        case (198, 51) where a[2] == 100, (203, 0) where a[2] == 113: true  // TEST-NET-2, -3
        case (224...255, _): true                                   // multicast, reserved, broadcast
        default: false
        }
    }

    static func isPrivateV6(_ a: [UInt8]) -> Bool {
        if a[0..<15].allSatisfy({ $0 == 0 }) { return true }        // :: and ::1
        if a[0..<12].allSatisfy({ $0 == 0 }) { return isPrivateV4(Array(a[12...])) }  // ::a.b.c.d (IPv4-compatible)
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return isPrivateV4(Array(a[12...])) }  // ::ffff:a.b.c.d
        if a[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0][...] { return isPrivateV4(Array(a[12...])) }   // 64:ff9b::/96
        if a[0..<6] == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01][...] { return true }                                     // 64:ff9b:1::/48, local NAT64
        if a[0] == 0x20 && a[1] == 0x02 { return isPrivateV4(Array(a[2..<6])) }                                          // 6to4
        if a[0..<4] == [0x20, 0x01, 0x00, 0x00][...] { return true }                                                      // Teredo, an IPv4 hidden inside
        if a[0] & 0xFE == 0xFC { return true }                     // unique local (fd00:ec2::254 among them)
        if a[0] == 0xFE && a[1] & 0xC0 == 0x80 { return true }     // link-local
        if a[0] == 0xFE && a[1] & 0xC0 == 0xC0 { return true }     // site-local (deprecated, still routed inside)
        if a[0] == 0xFF { return true }                            // multicast
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return true }  // documentation
        return false
    }

    private static func bytes(_ text: String, family: Int32, count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let parsed = buffer.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return parsed == 1 ? Array(buffer.prefix(count)) : nil
    }

    /// The host of an endpoint URL when it is written as an address (or `localhost`) that an
    /// endpoint may not reach: refused when it is added, before any DNS is asked.
    static func literalPrivateHost(of url: String) -> String? {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return nil }
        if host == "localhost" || host.hasSuffix(".localhost") { return host }
        return isPrivate(host) == true ? host : nil
    }

    /// A connection to an address an endpoint may not reach, refused once the name was resolved.
    struct Refused: Error, CustomStringConvertible {
        var address: String
        var description: String {
            "the endpoint's host resolved to \(address), a loopback, private or link-local address; "
                + "endpoints reach only public addresses unless added with --allow-private"
        }
    }

    /// What the delivery client runs on every new connection, once it is connected to the address
    /// the name resolved to (so a name that resolves differently next time is checked again): a
    /// connection to an address an endpoint may not reach is closed before any request is sent.
    @Sendable static func refuseConnection(_ channel: any Channel) -> EventLoopFuture<Void> {
        guard let address = channel.remoteAddress, !isPrivate(address) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(Refused(address: channel.remoteAddress?.ipAddress ?? "a non-IP address"))
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }
}
