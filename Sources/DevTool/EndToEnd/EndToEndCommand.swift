// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore

/// `sluice-dev e2e`: the client side of `scripts/e2e`. Serves the downstream sink, streams signed
/// Stripe events and Apple notifications at a running Sluice, then checks through the read API
/// and the sink that every acknowledged one was applied once and every Apple one forwarded.
struct EndToEndCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Stream signed events at Sluice and check that every acknowledged one took effect exactly once.",
        discussion: "Exits 1 when anything acknowledged was lost, applied twice, or not forwarded; or anything was refused.")

    @Option(help: "Base URL of ingest (or of the load balancer in front of it).") var url = "http://127.0.0.1:8080"
    @Option(help: "Port of the downstream sink on 127.0.0.1 (FORWARD_TARGETS points at it).") var sinkPort: Int
    @Option(help: "Path of the downstream sink.") var sinkPath = "/hooks/apple"
    @Option(help: "Path on the sink of the endpoint that receives entitlement.granted (and balance.changed) events.") var eventsPath = "/hooks/events"
    @Option(help: "That endpoint's whsec_ secret; given, every event's signature is verified and each user must be granted once.")
    var eventsSecret: String?
    @Option(help: "What the catalog grants each purchase of the run, as currency=amount (credits=100): each buyer must hold exactly that and, with --events-secret, be sent one balance.changed.")
    var grant: String?
    @Option(help: "Also send each event, at the same moment, to this base URL (repeat for several replicas).")
    var copyTo: [String] = []
    @Option(help: "Concurrent senders.") var senders = 8
    @Option(help: "Events per second offered during the paced phase.") var rate: Double = 100
    @Option(help: "Seconds of paced traffic.") var seconds: Double = 30
    @Option(help: "Seconds of unpaced traffic after it.") var burstSeconds: Double = 5
    @Option(help: "Stop after this many events.") var count: Int?
    @Option(help: "Seconds an event keeps being retried after the stream ends.") var giveUpSeconds: Double = 60
    @Option(help: "Seconds to wait for everything acknowledged to be applied and forwarded.") var settleSeconds: Double = 120
    @Option(help: "One event in N is an Apple notification.") var appleEvery = 3
    @Option(help: "One event in N is delivered twice.") var redeliverEvery = 10
    @Option(help: "Poison events among the others (spread over the first 100): stored, never applicable.") var poison = 0
    @Option(help: "The Stripe endpoint secret.") var secret = "whsec_dev_secret"
    @Option(help: "An API key of the read API.") var apiKey = "sluice_dev_key_for_this_machine_only_0001"
    @Option(help: "The development PKI folder (from `sluice-dev pki`).") var pki = ".dev/pki"
    @Option(help: "The bundle id ingest accepts.") var bundleId = "com.example.sluice"
    @Option(help: "A file created when the stream starts, for a script timing its faults.") var startedFile: String?
    @Option(help: "Serve Google's stand-ins (OIDC keys, OAuth token, Play Developer API) on this port of 127.0.0.1 and send Play pushes.")
    var googlePort: Int?
    @Option(help: "The service account key file the workers use (from `sluice-dev play-key`).") var playKeyFile: String?
    @Option(help: "One event in N is a Google Play push (with --google-port).") var playEvery = 5
    @Option(help: "GOOGLE_PUSH_AUDIENCE of ingest.") var googleAudience = "https://sluice.e2e/v1/webhooks/google-play"
    @Option(help: "GOOGLE_PUSH_SERVICE_ACCOUNT of ingest.") var googlePushAccount = "play-push@sluice-e2e.iam.gserviceaccount.com"

    func validate() throws {
        guard rate > 0 else { throw ValidationError("--rate must be above 0") }
        guard senders > 0 else { throw ValidationError("--senders must be at least 1") }
        guard (googlePort == nil) == (playKeyFile == nil) else { throw ValidationError("--google-port and --play-key-file go together") }
        if let grant, Self.grant(grant) == nil { throw ValidationError("--grant is currency=amount, such as credits=100") }
    }

    /// `credits=100` as a currency and a positive amount.
    static func grant(_ text: String) -> (currency: String, amount: Int64)? {
        let parts = text.split(separator: "=", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let amount = Int64(parts[1]), amount > 0 else { return nil }
        return (String(parts[0]), amount)
    }

    func run() async throws {
        let forwards = ForwardCounter(eventsSecret: eventsSecret)
        let (sinkPort, sinkPath, eventsPath) = (self.sinkPort, self.sinkPath, self.eventsPath)
        let google = try playKeyFile.map { file in
            GoogleStandIns(oidc: try GoogleOIDCStandIn(), api: try GooglePlayAPIStandIn(keyFile: try Data(contentsOf: URL(fileURLWithPath: file))))
        }
        let report = try await withThrowingTaskGroup(of: EndToEndReport?.self) { group in
            group.addTask {
                try await forwards.serve(port: sinkPort, path: sinkPath, eventsPath: eventsPath)
                return nil
            }
            if let google, let googlePort {
                group.addTask {
                    try await google.serve(port: googlePort)
                    return nil
                }
            }
            group.addTask { try await exercise(forwards: forwards, google: google) }
            while let result = try await group.next() {
                if let report = result {
                    group.cancelAll()
                    return report
                }
            }
            throw ExitCode.failure
        }
        say(report.text)
        say("summary " + report.summary)
        if !report.passed { throw ExitCode.failure }
    }

    private func exercise(forwards: ForwardCounter, google: GoogleStandIns?) async throws -> EndToEndReport {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(2), read: .seconds(10)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = senders * (1 + copyTo.count) + 16
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let runID = String(UUID().uuidString.prefix(8).lowercased())
            let planner = EventPlanner(
                runID: runID, signer: AppleJWSSigner(pki: try ApplePKI.load(from: URL(fileURLWithPath: pki))),
                bundleID: bundleId, appleEvery: appleEvery, redeliverEvery: redeliverEvery,
                poisonIndexes: Set((0..<poison).map { 1 + $0 * 100 / max(poison, 1) }), playEvery: playEvery, play: google?.api)
            let pushSigner = google.map { RetryingSender.PushSigner(google: $0.oidc, audience: googleAudience, account: googlePushAccount) }
            let stream = TrafficStream(
                planner: planner,
                destinations: ([url] + copyTo).map { RetryingSender(client: client, baseURL: $0, stripeSecret: secret, pushSigner: pushSigner) },
                clients: senders, rate: rate, pacedSeconds: seconds, burstSeconds: burstSeconds, giveUpSeconds: giveUpSeconds,
                maximumEvents: count)
            if let startedFile { _ = FileManager.default.createFile(atPath: startedFile, contents: nil) }
            say("streaming for \(seconds) s at \(rate) events/s, then \(burstSeconds) s unpaced (run \(runID))")
            let streamStart = ContinuousClock.now
            let sent = await stream.run()
            let streamDuration = streamStart.duration(to: .now)
            say("stream ended: \(sent.count) events; checking their effects")
            let settlement = await Settlement(
                checker: EffectChecker(client: client, baseURL: url, apiKey: apiKey, grant: grant.flatMap(Self.grant)), forwards: forwards,
                seconds: settleSeconds
            ).run(sent.filter { $0.outcome == .acknowledged && !$0.event.poison }.map(\.event))
            let acknowledgements = await PlayAcknowledgementCheck(api: google?.api, seconds: min(settleSeconds, 90))
                .run(sent.filter { $0.outcome == .acknowledged }.compactMap(\.event.playToken))
            try await client.shutdown()
            return EndToEndReport(
                sent: sent, settlement: settlement, acknowledgements: acknowledgements, forwards: forwards.received, unreadableForwards: forwards.unreadableCount,
                rejectedEvents: forwards.rejectedEventCount, checksEvents: eventsSecret != nil, checksGrants: grant != nil && eventsSecret != nil,
                pacedSeconds: seconds,
                streamSeconds: Double(streamDuration.components.seconds) + Double(streamDuration.components.attoseconds) / 1e18)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
