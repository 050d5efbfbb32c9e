// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Whether one client can starve every install's StoreKit sync (issue 37, finding 3), measured
/// against a running `ingest` with a client key: an honest install syncs from one loopback address
/// at a steady rate, alone (the baseline) and then while a flood of junk syncs comes from another
/// address as fast as `connections` connections can send. Reports, per phase, how many of the
/// honest install's requests were refused with `429`, and the flood's rate and refused share.
/// `scripts/bench-sync-flood` starts ingest with the default limits and runs it.
@main
struct SyncFlood: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "SyncFlood", abstract: "One client's flood against another's syncs.")

    @Option(help: "ingest's base URL.") var url = "http://127.0.0.1:8080"
    @Option(name: .customLong("client-key"), help: "A key from ingest's CLIENT_API_KEYS.") var clientKey: String
    @Option(help: "Seconds per phase.") var seconds: Double = 10
    @Option(help: "The flood's concurrent connections.") var connections = 32
    @Option(name: .customLong("honest-rate"), help: "The honest install's syncs per second.") var honestRate: Double = 2
    @Option(name: .customLong("flood-address"), help: "The loopback address the flood comes from.") var floodAddress = "127.0.0.2"
    @Option(name: .customLong("honest-address"), help: "The loopback address the honest install comes from.") var honestAddress = "127.0.0.3"

    struct Tally: Sendable {
        var sent = 0
        var refused = 0
        var errors = 0

        mutating func add(_ other: Tally) {
            sent += other.sent
            refused += other.refused
            errors += other.errors
        }

        var refusedShare: Double { sent == 0 ? 0 : Double(refused) / Double(sent) }
    }

    func run() async throws {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(30)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections + 2
        try await HTTPClient.withHTTPClient(configuration: configuration) { client in try await measure(client) }
    }

    private func measure(_ client: HTTPClient) async throws {
        let alone = try await honest(client, for: .milliseconds(Int(seconds * 1000)))
        print(String(format: "RESULT sync-flood phase=alone honest_sent=%d honest_429=%d honest_429_share=%.3f", alone.sent, alone.refused, alone.refusedShare))

        let duration = Duration.milliseconds(Int(seconds * 1000))
        let (flood, underFlood) = try await withThrowingTaskGroup(of: (Bool, Tally).self) { group in
            for _ in 0..<connections {
                group.addTask { (true, try await self.flood(client, for: duration)) }
            }
            group.addTask { (false, try await self.honest(client, for: duration)) }
            var flood = Tally()
            var honest = Tally()
            for try await (isFlood, tally) in group {
                if isFlood { flood.add(tally) } else { honest.add(tally) }
            }
            return (flood, honest)
        }
        print(String(
            format: "RESULT sync-flood phase=flood flood_rps=%.0f flood_429_share=%.3f honest_sent=%d honest_429=%d honest_429_share=%.3f errors=%d",
            Double(flood.sent) / seconds, flood.refusedShare, underFlood.sent, underFlood.refused, underFlood.refusedShare,
            flood.errors + underFlood.errors))
    }

    /// A junk sync with the client key from `address`: refused for its body (`400`) once the rate
    /// limits let it through, `429` when they do not.
    private func sync(_ client: HTTPClient, from address: String) async throws -> Int {
        var request = HTTPClientRequest(url: url + "/v1/iap/storekit-transactions")
        request.method = .POST
        request.localAddress = address
        request.headers.add(name: "X-Sluice-Key", value: clientKey)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"signed_transaction":"junk","user_id":"flood"}"#))
        let response = try await client.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }

    private func flood(_ client: HTTPClient, for duration: Duration) async throws -> Tally {
        var tally = Tally()
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            tally.sent += 1
            do {
                if try await sync(client, from: floodAddress) == 429 { tally.refused += 1 }
            } catch {
                tally.errors += 1
            }
        }
        return tally
    }

    private func honest(_ client: HTTPClient, for duration: Duration) async throws -> Tally {
        var tally = Tally()
        let interval = Duration.milliseconds(Int(1000 / honestRate))
        let deadline = ContinuousClock.now + duration
        var next = ContinuousClock.now
        while ContinuousClock.now < deadline {
            tally.sent += 1
            do {
                if try await sync(client, from: honestAddress) == 429 { tally.refused += 1 }
            } catch {
                tally.errors += 1
            }
            next += interval
            try await Task.sleep(until: next)
        }
        return tally
    }
}
