// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Hummingbird
import HTTPTypes
import NIOCore
import Shared

/// The API's rate limits (`RATE_LIMIT_PER_KEY`, `RATE_LIMIT_PER_ADDRESS`): a request with a
/// server key counts against its key; a request with a client key (an app's StoreKit sync), which
/// every install of the app shares, first against its client address and only then, if admitted
/// there, against the key — so one client refused for its address drains nothing the other
/// installs share, and the key's limit is a ceiling on the app's whole traffic. Over a limit is
/// `429` with `Retry-After`, counted in `sluice_ingest_rate_limited_total`.
struct RequestLimits: Sendable {
    /// Per key, or `nil` when off.
    let perKey: RateLimiter?
    /// Per client address for client keys, or `nil` when off.
    let perAddress: RateLimiter?
    /// `TRUST_FORWARDED_FOR`: the client address is the last `X-Forwarded-For` entry (the one
    /// the trusted proxy added), not the connection's peer.
    let trustForwardedFor: Bool
    let metrics: IngestMetrics

    /// A limit a request is counted against.
    enum Bucket: Sendable, Equatable {
        case clientAddress, key
    }

    /// The buckets a request with a key of `role` is counted against, in order: the first that
    /// refuses ends the check, so the ones after it are not charged.
    static func buckets(for role: APIKeyCheck.Role) -> [Bucket] {
        switch role {
        case .client: [.clientAddress, .key]
        case .server: [.key]
        }
    }

    /// - Throws: ``APIError`` `429` when the address or the key is over its limit.
    func admit(keyDigest: [UInt8], role: APIKeyCheck.Role, request: Request, remoteAddress: SocketAddress?) throws {
        for bucket in Self.buckets(for: role) {
            switch bucket {
            case .clientAddress:
                guard let perAddress, let address = clientAddress(request, remoteAddress: remoteAddress) else { continue }
                if case .limited(let seconds) = perAddress.take(Self.bucketKey(of: address)) {
                    throw limited("this client address", seconds: seconds, limit: "per_address")
                }
            case .key:
                if let perKey, case .limited(let seconds) = perKey.take(Self.hex(keyDigest.prefix(8))) {
                    throw limited("this API key", seconds: seconds, limit: "per_key")
                }
            }
        }
    }

    /// The client's address: the connection's peer, or behind a trusted proxy the last
    /// `X-Forwarded-For` entry (earlier entries are whatever the client sent).
    func clientAddress(_ request: Request, remoteAddress: SocketAddress?) -> String? {
        if trustForwardedFor, let forwarded = request.headers[.xForwardedFor],
           let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty {
            return last
        }
        return remoteAddress?.ipAddress
    }

    /// The per-address bucket an address counts against: an IPv4 address itself; an IPv6 address's
    /// /64, the block one subscriber is given, so that a client cannot take a fresh bucket (and a
    /// share of the key's ceiling) by rotating the addresses of its own block.
    static func bucketKey(of address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard address.contains(":"), bytes.withUnsafeMutableBytes({ inet_pton(AF_INET6, address, $0.baseAddress) }) == 1 else { return address }
        return bytes.prefix(8).map { String(format: "%02x", $0) }.joined() + "::/64"
    }

    private func limited(_ who: String, seconds: Int, limit: String) -> APIError {
        metrics.countRateLimited(limit: limit)
        return APIError(
            .tooManyRequests, code: "rate_limited", message: "too many requests from \(who); retry after \(seconds) s",
            headers: [.retryAfter: "\(seconds)"])
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
