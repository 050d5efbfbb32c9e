// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import UnixSignals

/// `worker run`: the pools of both queues and the metrics endpoint, until SIGTERM.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the worker pool until SIGTERM/SIGINT.",
        discussion: """
            Applies queued events and forwards applied Apple notifications, each queue with up to \
            WORKER_CONCURRENCY transactions in flight (events in batches of up to WORKER_BATCH_SIZE). On SIGTERM or SIGINT it stops dequeuing, lets running \
            jobs finish (at most max(LEASE_SECONDS, 30) s), and exits 0 within 10 s more.

            \(WorkerSettings.help)
            """)

    func run() async throws {
        let settings = try WorkerSettings(environment: EnvironmentValues.process())
        LoggingSetup.bootstrap(level: settings.logLevel, format: settings.logFormat)
        let logger = Logger(label: "worker")
        if let proof = settings.recovery.eventProof {
            // Before anything is applied: rows stored before the key was first set get their proofs.
            try await DatabaseSession.with(settings.database, maximumConnections: 1, logger: logger) { client in
                try await ProofBackfill.run(client: client, proof: proof, logger: logger)
            }
        } else {
            logger.warning("EVENT_SIGNING_KEY is not set: the worker applies any row the database holds, proven or not")
        }
        let client = try settings.database.makeClient(maximumConnections: settings.concurrency + 8, logger: logger)
        // One session each for the two pools' LISTEN, past the pooler DATABASE_URL may go through.
        let notifications = try settings.listenDatabase.map {
            try $0.makeClient(maximumConnections: 2, logger: logger)
        }
        try await DeliveryClients.with(Self.httpConfiguration(settings)) { http in
            let metrics = WorkerMetrics()
            let pools = Self.pools(
                settings: settings, client: client, notifications: notifications, http: http, metrics: metrics, logger: logger)
            let server = MetricsServer.build(
                host: settings.metricsHost, port: settings.metricsPort, metrics: metrics, statistics: QueueStatistics(client: client, logger: logger),
                readiness: DatabaseReadiness(client: client), logger: logger)
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
                .init(service: client),
                .init(service: DatabaseReachability(
                    client: client, database: settings.database, meanwhile: "no event is applied or delivered meanwhile, none is lost", logger: logger)),
                .init(
                    service: EnvironmentEndpointsService(
                        store: EndpointStore(client: client, logger: logger), targets: settings.forwardTargets.map(\.url),
                        secret: settings.forwardSecret, logger: logger),
                    successTerminationBehavior: .ignore),
                .init(service: pools.events), .init(service: pools.deliveries),
                // A metrics port that cannot be bound fails at start: the group is cancelled (every
                // service stops at once, before any job was begun) and the process exits naming
                // METRICS_PORT. A graceful shutdown of services still starting was seen to hang
                // past 20 s on a loaded machine.
                .init(service: NamedListener(server, address: .init(
                    host: settings.metricsHost, port: settings.metricsPort, hostVariable: "METRICS_HOST", portVariable: "METRICS_PORT"))),
            ]
            if let notifications { services.insert(.init(service: notifications), at: 1) }
            let recovery = Recovery(
                settings: settings.recovery, stripeAccounts: settings.stripeAccounts, http: http.anyAddress, client: client, metrics: metrics,
                logger: logger)
            recovery.announce(logger: logger)
            // This process's name in the maintenance leases (recovery streams, the pruner).
            let owner = WorkerPool.defaultOwner()
            if let interval = settings.recovery.interval, !recovery.isOff {
                services.append(.init(service: RecoveryService(recovery: recovery, interval: interval, owner: owner, logger: logger)))
            }
            services.append(.init(service: ClockExpiryService(
                sweep: ClockExpirySweep(client: client, outbox: pools.outbox, logger: logger),
                lease: MaintenanceLease(client: client, task: "clock-expiry", owner: owner, logger: logger), interval: settings.clockSweepInterval,
                logger: logger)))
            services.append(.init(service: LeaseRescueService(
                queues: [pools.events.queue, pools.deliveries.queue],
                lease: MaintenanceLease(client: client, task: "rescue", owner: owner, logger: logger), logger: logger)))
            if let checkout = settings.checkout {
                let stripe = StripeCheckoutAPI(
                    call: ProviderCall(http: http.anyAddress, provider: "Stripe"), apiKey: checkout.apiKey, apiVersion: checkout.apiVersion,
                    baseURL: checkout.baseURL)
                services.append(.init(service: CheckoutSweepService(
                    store: CheckoutStore(client: client, logger: logger), stripe: stripe,
                    lease: MaintenanceLease(client: client, task: "checkout-sweep", owner: owner, logger: logger),
                    interval: settings.clockSweepInterval, logger: logger)))
            }
            services.append(.init(service: BalanceExpiryService(
                store: BalanceStore(client: client, logger: logger),
                lease: MaintenanceLease(client: client, task: "balance-expiry", owner: owner, logger: logger),
                interval: settings.clockSweepInterval, logger: logger)))
            services.append(.init(service: BalanceAnnouncer(
                client: client, lease: MaintenanceLease(client: client, task: "balance-announce", owner: owner, logger: logger),
                onCreated: { pools.deliveries.wake() }, logger: logger)))
            if let consumption = settings.consumption, let apple = settings.recovery.apple {
                let api = AppStoreServerAPI(
                    call: ProviderCall(http: http.anyAddress, provider: "App Store Server", maximumAttempts: 3),
                    token: AppleAPIToken(keyID: apple.keyID, issuerID: apple.issuerID, key: apple.privateKey), baseURLs: apple.baseURLs)
                services.append(.init(service: ConsumptionResponder(
                    client: client, api: api, settings: consumption,
                    lease: MaintenanceLease(client: client, task: "consumption-response", owner: owner, logger: logger),
                    interval: settings.clockSweepInterval, logger: logger)))
            }
            if let googlePlay = settings.googlePlay {
                services.append(.init(service: PlayAcknowledger(
                    client: client, api: googlePlay.api(call: ProviderCall(http: http.anyAddress, provider: PlayDeveloperAPI.provider), logger: logger),
                    lease: MaintenanceLease(client: client, task: "play-acknowledge", owner: owner, logger: logger),
                    interval: settings.clockSweepInterval, metrics: metrics, logger: logger)))
            }
            if let prune = settings.prune {
                services.append(.init(service: PruneService(
                    pruner: QueuePruner(client: client, logger: logger),
                    lease: MaintenanceLease(client: client, task: "prune", owner: owner, logger: logger), config: prune, logger: logger)))
            }
            var group = ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger)
            group.maximumGracefulShutdownDuration = .seconds(max(settings.queue.leaseSeconds, 30))
            if !settings.forwardTargets.isEmpty && settings.forwardSigner == nil {
                logger.warning("FORWARD_TARGETS is set without FORWARD_SECRET: forwards are unsigned and receivers cannot tell them from forgeries")
            }
            for target in settings.forwardTargets where target.isUnencryptedRemote {
                logger.warning("a forward target is plain http:// to another host: bodies travel unencrypted", metadata: [
                    "target": "\(ForwardTarget.label(for: target.url))"])
            }
            if let warning = settings.sandboxAccess.startWarning { logger.log(level: settings.sandboxAccess.startLogLevel, "\(warning)") }
            logger.info("worker starting", metadata: [
                "concurrency": "\(settings.concurrency)", "forward_targets": "\(settings.forwardTargets.count)",
                "wakes_on": "\(!settings.listens ? "polling" : settings.listenDatabase.map { "LISTEN at \($0.host):\($0.port)" } ?? "LISTEN")",
                "metrics_address": "\(settings.metricsHost):\(settings.metricsPort)",
            ])
            try await StopDeadline.run(group, logger: logger)
        }
    }

    /// The events pool, whose changes and Apple notifications create deliveries, the deliveries
    /// pool it wakes, and the outbox that writes them.
    static func pools(
        settings: WorkerSettings, client: PostgresClient, notifications: PostgresClient? = nil, http: DeliveryClients, metrics: WorkerMetrics?,
        logger: Logger
    ) -> (events: WorkerPool, deliveries: WorkerPool, outbox: ForwardOutbox) {
        let forwarder = ForwardHandler(
            http: http, signer: settings.forwardSigner, endpoints: EndpointStore(client: client, logger: logger),
            disableAfterSeconds: settings.endpointDisableAfterSeconds, rateLimiter: EndpointRateLimiter(), timeout: settings.forwardTimeout,
            maxRetryAfterSeconds: settings.queue.retry.maxSeconds, metrics: metrics, logger: logger)
        // Longer than any healthy attempt: the lease, 30 s, or a forward's timeout with a margin.
        let attemptTimeLimit = max(.seconds(max(settings.queue.leaseSeconds, 30)), settings.forwardTimeout + .seconds(10))
        let poolConfiguration = WorkerPool.Configuration(
            concurrency: settings.concurrency, listens: settings.listens, pollInterval: settings.pollInterval,
            attemptTimeLimit: attemptTimeLimit)
        let deliveries = WorkerPool(
            queue: JobQueue(client: client, name: .deliveries, configuration: settings.queue, logger: logger),
            // A delivery's kind is the source of the notification it forwards, or the store
            // (`cause.provider`) of the outgoing event it sends.
            handlers: Dictionary(
                Set(EventSource.allCases.map(\.rawValue) + StoreProvider.allCases.map(\.rawValue)).map { ($0, forwarder as any JobHandler) },
                uniquingKeysWith: { first, _ in first }),
            configuration: poolConfiguration, metrics: metrics, notifications: notifications, logger: logger)
        let outbox = ForwardOutbox(
            leeway: TimeInterval(settings.entitlementLeewaySeconds), sandboxAccess: settings.sandboxAccess,
            catalog: CatalogGrants(client: client, logger: logger), onCreated: { deliveries.wake() })
        // Events may be applied in batches (WORKER_BATCH_SIZE); deliveries each make their own HTTP call.
        var eventsConfiguration = poolConfiguration
        eventsConfiguration.batchSize = settings.batchSize
        let events = WorkerPool(
            queue: JobQueue(client: client, name: .events, configuration: settings.queue, logger: logger),
            handlers: EventHandlers.all(
                logger: logger, outbox: outbox, stripeAccounts: settings.stripeAccounts, transferBehavior: settings.transferBehavior,
                leeway: TimeInterval(settings.entitlementLeewaySeconds), proof: settings.recovery.eventProof,
                playPushes: PlayNotificationHandler(
                    api: settings.googlePlay?.api(call: ProviderCall(http: http.anyAddress, provider: PlayDeveloperAPI.provider), logger: logger),
                    client: client, proof: settings.recovery.eventProof, logger: logger)),
            configuration: eventsConfiguration, metrics: metrics, notifications: notifications, logger: logger)
        return (events, deliveries, outbox)
    }

    /// One connection pool for every delivery, as wide as the deliveries in flight.
    static func httpConfiguration(_ settings: WorkerSettings) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.concurrency)
        configuration.timeout = .init(connect: .seconds(5))
        configuration.redirectConfiguration = .disallow
        return configuration
    }
}

/// The handlers of the events queue, by source.
enum EventHandlers {
    /// - Parameter outbox: where changes are announced and notifications forwarded; `nil` sends nothing (`worker rebuild`).
    ///   - transferBehavior: `TRANSFER_BEHAVIOR`.
    ///   - leeway: `ENTITLEMENT_LEEWAY_SECONDS`.
    ///   - proof: `EVENT_SIGNING_KEY`: each handler applies only rows Sluice stored (``ProvenRowHandler``).
    ///   - playPushes: follows Google Play pushes to the states it fetches; `nil` leaves them (`worker rebuild`
    ///     applies the fetched states only).
    static func all(
        logger: Logger, outbox: ForwardOutbox? = nil, stripeAccounts: Set<String> = [], transferBehavior: TransferBehavior = .transfer,
        leeway: TimeInterval = 0, proof: EventProof? = nil, playPushes: PlayNotificationHandler? = nil
    ) -> [String: any JobHandler] {
        let apple = AppleEventHandler(logger: logger, outbox: outbox, transferBehavior: transferBehavior, leeway: leeway)
        let handlers: [String: any BatchableJobHandler] = [
            EventSource.stripe.rawValue: StripeEventHandler(logger: logger, accounts: stripeAccounts, outbox: outbox),
            EventSource.apple.rawValue: apple,
            EventSource.storekit.rawValue: apple,
            EventSource.account.rawValue: AppAccountTokenHandler(logger: logger, outbox: outbox),
            EventSource.playPurchase.rawValue: PlayPurchaseHandler(logger: logger, outbox: outbox, transferBehavior: transferBehavior, leeway: leeway),
        ]
        var all: [String: any JobHandler] = proof.map { proof in handlers.mapValues { ProvenRowHandler($0, proof: proof) } } ?? handlers
        all[EventSource.play.rawValue] = playPushes
        return all
    }
}
