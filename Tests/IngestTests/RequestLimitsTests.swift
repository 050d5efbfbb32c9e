// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird
import NIOCore
import Shared
import Testing

@testable import Ingest

/// The order of the API's rate limits (issue 37, finding 3): every install of an app shares its
/// client key, so a client refused for its address must cost the key nothing.
@Suite struct RequestLimitsTests {
    @Test(arguments: [
        (APIKeyCheck.Role.client, [RequestLimits.Bucket.clientAddress, .key]),
        (.server, [.key]),
    ])
    func theBucketsARequestIsCountedAgainstInOrder(role: APIKeyCheck.Role, buckets: [RequestLimits.Bucket]) {
        #expect(RequestLimits.buckets(for: role) == buckets)
    }

    static func request() -> Request {
        Request(head: HTTPRequest(method: .post, scheme: "http", authority: "sluice", path: "/v1/iap/storekit-transactions"), body: .init(buffer: ByteBuffer()))
    }

    /// Limits that refill once in 1,000 s: no test run refills a bucket.
    static func limits(keyBurst: Double, addressBurst: Double) -> RequestLimits {
        RequestLimits(
            perKey: RateLimiter(.init(perSecond: 0.001, burst: keyBurst)), perAddress: RateLimiter(.init(perSecond: 0.001, burst: addressBurst)),
            trustForwardedFor: false, metrics: IngestMetrics())
    }

    static func admitted(_ limits: RequestLimits, role: APIKeyCheck.Role = .client, from address: String) throws -> Bool {
        do {
            try limits.admit(keyDigest: Array(repeating: 7, count: 32), role: role, request: request(), remoteAddress: try SocketAddress(ipAddress: address, port: 4_000))
            return true
        } catch let error as APIError where error.status == .tooManyRequests {
            return false
        }
    }

    @Test func aClientRefusedForItsAddressLeavesTheKeyToTheOtherInstalls() throws {
        let limits = Self.limits(keyBurst: 3, addressBurst: 1)
        #expect(try Self.admitted(limits, from: "198.51.100.1"))
        // One install floods: every request past its address's burst is refused there, and only there.
        for _ in 0..<500 { #expect(try !Self.admitted(limits, from: "198.51.100.1")) }
        // The key's remaining two requests are the other installs'.
        #expect(try Self.admitted(limits, from: "198.51.100.2"))
        #expect(try Self.admitted(limits, from: "198.51.100.3"))
        // The key's ceiling still holds for the app as a whole.
        #expect(try !Self.admitted(limits, from: "198.51.100.4"))
    }

    @Test(arguments: [
        ("198.51.100.7", "198.51.100.7"), ("2001:db8:1:2:aaaa::1", "20010db800010002::/64"), ("2001:db8:1:2:ffff:1:2:3", "20010db800010002::/64"),
        ("2001:db8:1:3::1", "20010db800010003::/64"), ("not an address", "not an address"),
    ])
    func anIPv6ClientCountsByItsSlash64(address: String, key: String) {
        #expect(RequestLimits.bucketKey(of: address) == key)
    }

    @Test func aServerKeyIsNotLimitedByAddress() throws {
        let limits = Self.limits(keyBurst: 3, addressBurst: 1)
        for _ in 0..<3 { #expect(try Self.admitted(limits, role: .server, from: "198.51.100.1")) }
        #expect(try !Self.admitted(limits, role: .server, from: "198.51.100.1"), "then its key's limit")
    }
}
