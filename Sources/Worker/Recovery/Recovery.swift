// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import PostgresNIO
import Shared

/// Recovery and reconciliation of one worker, built from its settings: the streams it recovers,
/// each with its checkpoint, and the reconciler.
struct Recovery: Sendable {
    /// One thing to recover, with its own checkpoint.
    struct Stream: Sendable {
        /// `apple:production:failures`, `apple:sandbox:all`, `stripe:production`, …
        var name: String
        var source: EventSource
        /// Runs every `cadence` intervals (the complete Apple history is asked less often than its failures).
        var cadence: Int
        var recover: @Sendable (_ from: Date, _ to: Date, _ dryRun: Bool, _ logger: Logger) async throws -> RecoveryReport
    }

    /// How far before its checkpoint a window starts: events the provider lists late are still found.
    static let overlap: TimeInterval = 10 * 60
    /// Where a stream seen for the first time starts.
    static let firstWindow: TimeInterval = 86_400
    /// How often the complete Apple history is asked, in intervals.
    static let completeHistoryCadence = 6

    let settings: RecoverySettings
    let streams: [Stream]
    let reconciler: Reconciler
    let checkpoints: RecoveryCheckpoints
    let metrics: WorkerMetrics?

    var isOff: Bool { settings.apple == nil && settings.stripe == nil && settings.play == nil }

    init(
        settings: RecoverySettings, stripeAccounts: Set<String>, http: HTTPClient, client: PostgresClient, metrics: WorkerMetrics?,
        logger: Logger
    ) {
        self.settings = settings
        self.metrics = metrics
        self.checkpoints = RecoveryCheckpoints(client: client, logger: logger)
        let store = RecoveredEventStore(client: client, proof: settings.eventProof, logger: logger)
        var streams: [Stream] = []
        var reconciler = Reconciler(store: store, settings: settings, client: client)
        if let apple = settings.apple {
            let call = ProviderCall(http: http, provider: "apple", onError: { metrics?.countProviderError(provider: "apple", status: $0) })
            let api = AppStoreServerAPI(
                call: call, token: AppleAPIToken(keyID: apple.keyID, issuerID: apple.issuerID, key: apple.privateKey),
                baseURLs: apple.baseURLs)
            let recovery = AppleRecovery(api: api, verifier: apple.verifier, bundleIDs: apple.bundleIDs, store: store)
            for environment in PurchaseEnvironment.allCases {
                for onlyFailures in [true, false] {
                    streams.append(Stream(
                        name: "apple:\(environment.rawValue):\(onlyFailures ? "failures" : "all")", source: .apple,
                        cadence: onlyFailures ? 1 : Self.completeHistoryCadence,
                        recover: { from, to, dryRun, logger in
                            try await recovery.recover(
                                environment: environment, from: from, to: to, onlyFailures: onlyFailures, dryRun: dryRun, logger: logger)
                        }))
                }
            }
            reconciler.apple = (api, apple.verifier, apple.bundleIDs)
        }
        if let stripe = settings.stripe {
            let call = ProviderCall(http: http, provider: "stripe", onError: { metrics?.countProviderError(provider: "stripe", status: $0) })
            let api = StripeAPI(call: call, apiKey: stripe.apiKey, apiVersion: stripe.apiVersion, baseURL: stripe.baseURL)
            let recovery = StripeRecovery(api: api, accounts: stripeAccounts.sorted(), store: store)
            streams.append(Stream(
                name: "stripe:\(stripe.environment.rawValue)", source: .stripe, cadence: 1,
                recover: { from, to, dryRun, logger in try await recovery.recover(from: from, to: to, dryRun: dryRun, logger: logger) }))
            reconciler.stripe = (api, stripe.environment)
        }
        if let play = settings.play {
            let call = ProviderCall(http: http, provider: "google_play", onError: { metrics?.countProviderError(provider: "google_play", status: $0) })
            let api = play.api(call: call, logger: logger)
            let recovery = PlayRecovery(api: api, packageNames: play.packageNames, store: store)
            streams.append(Stream(
                name: "google_play:voided", source: .playPurchase, cadence: 1,
                recover: { from, to, dryRun, logger in try await recovery.recover(from: from, to: to, dryRun: dryRun, logger: logger) }))
            reconciler.play = (api, play.packageNames)
        }
        self.streams = streams
        self.reconciler = reconciler
    }

    /// Whether a stream last stored up to `checkpoint` is due again: `cadence` intervals later,
    /// less a tenth for timer jitter.
    static func isDue(_ stream: Stream, checkpoint: Date, now: Date, interval: Double) -> Bool {
        now.timeIntervalSince(checkpoint) >= interval * Double(stream.cadence) * 0.9
    }

    /// How long a worker owns a stream it works: two intervals, at least 30 s. A worker that dies
    /// holding it delays that stream by this much; the checkpoint stays where it was.
    static func leaseSeconds(interval: Double) -> Double {
        max(2 * interval, 30)
    }

    /// Says once, at start, what is on and what is off.
    func announce(logger: Logger) {
        let interval = settings.interval.map { "every \($0.components.seconds) s" } ?? "off (RECOVERY_INTERVAL_SECONDS=0)"
        logger.info("recovery", metadata: [
            "apple": "\(settings.apple == nil ? "off: APPLE_API_KEY_ID, APPLE_API_ISSUER_ID, APPLE_API_PRIVATE_KEY_FILE not set" : "on")",
            "stripe": "\(settings.stripe == nil ? "off: STRIPE_API_KEY not set" : "on (\(settings.stripe!.environment.rawValue))")",
            "google_play": "\(settings.play == nil ? "off: GOOGLE_PLAY_SERVICE_ACCOUNT_FILE not set" : "on")",
            "interval": "\(interval)",
        ])
    }

    /// One cycle of `worker run`: every stream that is due and not worked by another worker
    /// recovers the window since its checkpoint (less the overlap), then a batch of due
    /// entitlements is reconciled. A failing stream is logged and left for the next cycle.
    func runCycle(owner: String, interval: Duration, logger: Logger, now: @Sendable () -> Date = Date.init) async throws {
        let intervalSeconds = Double(interval.components.seconds)
        let known = Dictionary(uniqueKeysWithValues: try await checkpoints.all().map { ($0.stream, $0) })
        for stream in streams {
            let start = now()
            if let checkpoint = known[stream.name]?.checkpoint, !Self.isDue(stream, checkpoint: checkpoint, now: start, interval: intervalSeconds) {
                continue
            }
            guard let checkpoint = try await checkpoints.lease(
                stream.name, owner: owner, for: Self.leaseSeconds(interval: intervalSeconds),
                initial: start.addingTimeInterval(-Self.firstWindow))
            else { continue }
            // Another worker may have worked it since the checkpoints were read.
            guard Self.isDue(stream, checkpoint: checkpoint, now: start, interval: intervalSeconds) else {
                try await checkpoints.release(stream.name, owner: owner)
                continue
            }
            do {
                let report = try await stream.recover(checkpoint.addingTimeInterval(-Self.overlap), start, false, logger)
                try await checkpoints.advance(stream.name, owner: owner, to: start)
                metrics?.countRecovered(source: stream.source.rawValue, report)
                metrics?.recordCheckpoint(stream: stream.name, lagSeconds: now().timeIntervalSince(start), succeededAt: now().timeIntervalSince1970)
                if report.stored > 0 || report.rejectedCount > 0 {
                    logger.info("recovered", metadata: ["stream": "\(stream.name)", "report": "\(report.text)"])
                }
            } catch {
                try await checkpoints.fail(stream.name, owner: owner, error: String(describing: error))
                metrics?.recordCheckpoint(stream: stream.name, lagSeconds: now().timeIntervalSince(checkpoint), succeededAt: nil)
                logger.error("recovery failed", metadata: ["stream": "\(stream.name)", "error": "\(error)"])
            }
        }
        // One worker reconciles at a time, under a lease of its own: two would ask the provider twice.
        guard try await checkpoints.lease(
            Self.reconcileStream, owner: owner, for: Self.leaseSeconds(interval: intervalSeconds), initial: now()) != nil
        else { return }
        do {
            let due = try await reconciler.due(limit: settings.reconcileBatch, now: now())
            if !due.isEmpty {
                let report = try await reconciler.check(due, dryRun: false, logger: logger) { metrics?.countReconciliation($0) }
                logger.info("reconciled", metadata: ["report": "\(report.text)"])
            }
            try await checkpoints.advance(Self.reconcileStream, owner: owner, to: now())
        } catch {
            try await checkpoints.fail(Self.reconcileStream, owner: owner, error: String(describing: error))
            throw error
        }
    }

    /// The lease (and last success) of reconciliation in `recovery_checkpoints`.
    static let reconcileStream = "reconcile"
}
