// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// Endpoints may not reach inside (issue 37, finding 6): loopback, private, link-local and
/// metadata addresses are refused on every connection, once the name is resolved, unless the
/// endpoint was added with `--allow-private`; an address written in the URL is refused when it is added.
@Suite(.timeLimit(.minutes(3)))
struct EndpointReachTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("127.8.9.10", true), ("10.1.2.3", true), ("172.16.0.1", true), ("172.31.255.255", true),
        ("172.32.0.1", false), ("192.168.1.1", true), ("169.254.169.254", true), ("100.64.0.1", true), ("100.128.0.1", false),
        ("0.0.0.0", true), ("224.0.0.1", true), ("255.255.255.255", true), ("8.8.8.8", false), ("93.184.216.34", false),
        ("::1", true), ("::", true), ("[::1]", true), ("fe80::1", true), ("fe80::1%eth0", true), ("fd00:ec2::254", true),
        ("fc00::1", true), ("ff02::1", true), ("::ffff:127.0.0.1", true), ("::ffff:169.254.169.254", true), ("::ffff:8.8.8.8", false),
        ("64:ff9b::a9fe:a9fe", true), ("64:ff9b::808:808", false), ("2002:a9fe:a9fe::1", true), ("2002:808:808::1", false),
        ("2606:4700:4700::1111", false), ("2001:db8::1", true), ("::a9fe:a9fe", true), ("::808:808", false),
        ("64:ff9b:1::a00:1", true), ("fec0::1", true), ("2001:0:4136:e378::1", true), ("example.com", nil), ("localhost", nil),
    ] as [(String, Bool?)])
    func whichAddressesAreInside(address: String, isPrivate: Bool?) {
        #expect(PrivateAddress.isPrivate(address) == isPrivate, "\(address)")
    }

    @Test(arguments: [
        ("http://127.0.0.1/hook", "127.0.0.1"), ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://[::1]:8443/x", "[::1]"), ("http://localhost:8000/", "localhost"), ("http://LOCALHOST/", "localhost"),
        ("http://api.localhost/", "api.localhost"), ("https://hooks.example.com/x", nil), ("https://8.8.8.8/x", nil),
    ] as [(String, String?)])
    func anAddressWrittenInTheURLIsKnownWithoutDNS(url: String, host: String?) {
        #expect(PrivateAddress.literalPrivateHost(of: url) == host, "\(url)")
    }

    @Test func aNameThatResolvesInsideIsRefusedOnTheConnectionUnlessAllowed() async throws {
        try await HTTPSink.with(path: "/hooks/events") { sink in
            try await SystemHarness.run { system in
                let store = EndpointStore(client: system.db.client, logger: TestDatabase.logger)
                // A name, not an address: nothing to refuse until it is resolved (to 127.0.0.1 or ::1).
                let url = sink.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                #expect(url.contains("//localhost:"))
                let endpoint = try await store.add(url: url, changes: .init(), secret: Endpoint.newSecret())
                try await system.stripe("payment_intent.succeeded", StripeObjects.paymentIntent("pi_reach", user: "u_reach"))
                try await system.drain()
                try await system.forward()
                #expect(sink.received.isEmpty, "no request reached the address inside")
                let errors = try await system.db.strings("SELECT coalesce(last_error, '') FROM deliveries")
                #expect(!errors.isEmpty && errors.allSatisfy { $0.contains("--allow-private") }, "\(errors)")

                // Allowed: the same delivery, tried again, goes through.
                _ = try await store.update(endpoint.id, .init(allowPrivate: true))
                try await system.db.client.query(
                    "UPDATE deliveries SET state = 'pending', attempts = 0, run_at = now()", logger: TestDatabase.logger)
                try await system.forward()
                #expect(sink.received.count == errors.count)
            }
        }
    }

    @Test func theCommandsRefuseAnAddressInsideUnlessAllowed() async throws {
        try await TestDatabase.with { db in
            for url in ["http://127.0.0.1/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/x", "http://localhost/x"] {
                let refused = try await OperatorCommandTests.worker(db, ["endpoints", "add", url])
                #expect(refused.status == 2 && refused.stderr.contains("--allow-private"), "\(url): \(refused.stderr)")
            }
            let allowed = try await OperatorCommandTests.worker(db, ["endpoints", "add", "http://10.0.0.5/hook", "--allow-private", "--json"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            let endpoint = try #require(try OperatorCommandTests.json(allowed.stdout) as? [String: Any])
            #expect(endpoint["allow_private"] as? Bool == true)
            let id = try #require(endpoint["id"] as? String)
            let moved = try await OperatorCommandTests.worker(db, ["endpoints", "update", id, "--url", "http://192.168.0.9/hook"])
            #expect(moved.status == 2 && moved.stderr.contains("--allow-private"))
            let revoked = try await OperatorCommandTests.worker(db, ["endpoints", "update", id, "--no-allow-private", "--json"])
            #expect((try OperatorCommandTests.json(revoked.stdout) as? [String: Any])?["allow_private"] as? Bool == false)
            #expect(try await db.scalar("SELECT count(*) FROM endpoints") == 1)
        }
    }
}
