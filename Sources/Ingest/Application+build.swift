// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import PostgresNIO
import Prometheus
import Shared

/// The request context of every `ingest` route.
typealias IngestContext = IngestRequestContext

/// Builds the `ingest` application: the PostgreSQL client, the group-commit writer and the HTTP
/// server, run in that order and shut down in reverse (the server stops accepting and finishes
/// in-flight requests first, then the writer flushes, then the client closes).
///
/// - Throws: ``ConfigurationError`` when the Apple root certificates cannot be read.
func buildApplication(settings: IngestSettings, logger: Logger) throws -> some ApplicationProtocol {
    let client = try settings.database.makeClient(maximumConnections: 12, logger: logger)
    let writer = GroupCommitWriter(
        store: EventStore(client: client, proof: settings.eventProof, logger: logger),
        configuration: .init(flushTimeout: settings.storeTimeout), logger: logger)
    let metrics = IngestMetrics()
    // A streaming replica for the read API, checked by the lag monitor (READ_DATABASE_URL).
    var replica: (client: PostgresClient, lag: ReplicaLag)?
    if let readDatabase = settings.readDatabase {
        let replicaClient = try readDatabase.makeClient(maximumConnections: 8, logger: logger)
        replica = (replicaClient, ReplicaLag(
            primary: StateReader(client: client, tokenProof: settings.eventProof, logger: logger),
            replica: StateReader(client: replicaClient, tokenProof: settings.eventProof, logger: logger),
            maximumLag: settings.readMaximumLag))
    }
    let changes = settings.checkout == nil ? nil : UserChanges(client: client, logger: logger)
    let router = try buildRouter(
        settings: settings, client: client, writer: writer, metrics: metrics, replicaLag: replica?.lag, changes: changes, logger: logger)
    var app = Application(
        router: router,
        server: .http1(configuration: .init(idleTimeout: IdleConnections.timeout)),
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "sluice-ingest"),
        logger: logger)
    app.addServices(
        client, writer, DatabaseReachability(
            client: client, database: settings.database, meanwhile: "requests that need it answer 503 meanwhile (webhooks too: the providers retry)",
            logger: logger),
        NamedListener(buildAdminApplication(settings: settings, client: client, metrics: metrics, logger: logger), address: settings.adminAddress))
    if let changes { app.addServices(changes) }
    if let replica {
        app.addServices(replica.client, ReplicaLagMonitor(lag: replica.lag, primary: client, replica: replica.client, metrics: metrics, logger: logger))
        logger.info("the read API reads from READ_DATABASE_URL while its lag is within \(settings.readMaximumLag) s")
    }
    return app
}

/// The admin server: `/healthz`, `/readyz` and `/metrics` on `INGEST_ADMIN_HOST:INGEST_ADMIN_PORT`,
/// for probes and Prometheus, never behind the public load balancer.
func buildAdminApplication(settings: IngestSettings, client: PostgresClient, metrics: IngestMetrics, logger: Logger) -> some ApplicationProtocol {
    Application(
        router: buildAdminRouter(client: client, metrics: metrics),
        server: .http1(configuration: .init(idleTimeout: IdleConnections.timeout)),
        configuration: .init(address: .hostname(settings.adminHost, port: settings.adminPort), serverName: "sluice-ingest-admin"),
        onServerRunning: { channel in
            logger.info("ingest admin listening", metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? "?")"])
        },
        logger: logger)
}

func buildAdminRouter(client: PostgresClient, metrics: IngestMetrics) -> Router<IngestContext> {
    let router = Router(context: IngestContext.self)
    router.addMiddleware { JSONErrorMiddleware() }
    HealthController<IngestContext>(readiness: DatabaseReadiness(client: client), registry: metrics.registry).addRoutes(to: router)
    router.answerMethodNotAllowed(on: ["/healthz", "/readyz", "/metrics"], allowed: .get)
    return router
}

func buildRouter(
    settings: IngestSettings, client: PostgresClient, writer: GroupCommitWriter, metrics: IngestMetrics, replicaLag: ReplicaLag? = nil,
    changes: UserChanges? = nil, logger: Logger
) throws -> Router<IngestContext> {
    let router = Router(context: IngestContext.self)
    router.addMiddleware {
        RequestMetricsMiddleware(metrics: metrics)
        JSONErrorMiddleware()
    }
    let apple = settings.appleRoots.map { roots in
        AppleNotificationVerifier(
            chainVerifier: AppleChainVerifier(trustedRoots: roots.certificates, revocationCheck: settings.appleRevocationCheck),
            configuration: .init(bundleIDs: settings.appleBundleIDs, appAppleID: settings.appleAppAppleID))
    }
    let tokens = AppAccountTokens(client: client, proof: settings.eventProof, logger: logger)
    // One set of limits for every API route: a key's requests count together.
    let limits = RequestLimits(
        perKey: settings.rateLimitPerKey == 0
            ? nil : RateLimiter(.init(perSecond: settings.rateLimitPerKey, burst: max(2, 2 * settings.rateLimitPerKey).rounded(.down))),
        perAddress: settings.rateLimitPerAddress == 0
            ? nil : RateLimiter(.init(perSecond: settings.rateLimitPerAddress, burst: max(20, 2 * settings.rateLimitPerAddress).rounded(.down))),
        trustForwardedFor: settings.trustForwardedFor, metrics: metrics)
    let apiKeys = APIKeyCheck(server: settings.apiKeys, client: settings.clientAPIKeys, limits: limits)
    let database = DatabaseCalls(limit: settings.database.timeout)
    let webhooks = WebhookController<IngestContext>(
        receiver: EventReceiver(
            writer: writer, metrics: metrics, maxBodyBytes: settings.maxBodyBytes,
            bodyTimeout: .seconds(settings.requestTimeoutSeconds), storeTimeout: settings.storeTimeout),
        stripe: settings.stripeSecrets.isEmpty
            ? nil : StripeSignatureVerifier(secrets: settings.stripeSecrets, toleranceSeconds: settings.stripeToleranceSeconds),
        apple: apple, play: settings.googlePush?.verifier(),
        apiKeys: apiKeys, tokens: tokens,
        syncUsers: StoreKitSyncUsers(client: client, limit: settings.syncMaxUsersPerTransaction, logger: logger),
        database: database)
    webhooks.addRoutes(to: router)
    let receiptSyncs = apple.map {
        StoreKitSyncs(receiver: webhooks.receiver, apple: $0, tokens: tokens, syncUsers: webhooks.syncUsers, database: database)
    }
    let receiptHistory = settings.appStoreAPI.flatMap { api in
        apple.map { verifier in
            ReceiptTransactionHistory(
                api: api.api(call: ProviderCall(http: .shared, provider: "App Store Server", timeout: .seconds(10), maximumAttempts: 2, baseDelay: .milliseconds(200), maximumDelay: .seconds(1))),
                bundleIDs: api.bundleIDs, verifier: verifier)
        }
    }
    ReceiptController<IngestContext>(history: receiptHistory, syncs: receiptSyncs, apiKeys: apiKeys, receiver: webhooks.receiver)
        .addRoutes(to: router)
    let playSyncs = settings.googlePlayAPI.map { api in
        PlayPurchaseSyncs(
            receiver: webhooks.receiver,
            api: api.api(
                call: ProviderCall(http: .shared, provider: PlayDeveloperAPI.provider, timeout: .seconds(10), maximumAttempts: 2,
                                   baseDelay: .milliseconds(200), maximumDelay: .seconds(1)),
                logger: logger),
            packageNames: Set(api.packageNames), syncUsers: webhooks.syncUsers, database: database)
    }
    PlayPurchaseController<IngestContext>(syncs: playSyncs, apiKeys: apiKeys, receiver: webhooks.receiver).addRoutes(to: router)
    HealthController<IngestContext>.addLiveness(to: router)
    ReadController<IngestContext>(
        source: replicaLag.map(ReadSource.replica) ?? .primary(StateReader(client: client, tokenProof: settings.eventProof, logger: logger)), apiKeys: apiKeys,
        database: database, leeway: Double(settings.entitlementLeewaySeconds), defaultEnvironment: settings.readEnvironment,
        sandboxAccess: settings.sandboxAccess)
        .addRoutes(to: router)
    AppAccountTokenController<IngestContext>(
        tokens: tokens, apiKeys: apiKeys, database: database)
        .addRoutes(to: router)
    BalanceController<IngestContext>(store: BalanceStore(client: client, logger: logger), apiKeys: apiKeys, database: database)
        .addRoutes(to: router)

    let checkout = checkoutController(settings: settings, client: client, apiKeys: apiKeys, database: database, changes: changes, logger: logger)
    checkout.addRoutes(to: router)
    ProductsController<IngestContext>(
        catalog: CatalogStore(client: client, logger: logger), prices: checkout.maker?.prices, apiKeys: apiKeys, database: database)
        .addRoutes(to: router)

    router.answerMethodNotAllowed(on: [AppAccountTokenController<IngestContext>.path], allowed: .put)
    router.answerMethodNotAllowed(
        on: [CheckoutController<IngestContext>.createPath, ReceiptController<IngestContext>.storePath, ReceiptController<IngestContext>.verifyPath,
             PlayPurchaseController<IngestContext>.path],
        allowed: .post)
    router.answerMethodNotAllowed(
        on: [WebhookController<IngestContext>.stripePath, WebhookController<IngestContext>.applePath,
             WebhookController<IngestContext>.storeKitPath, WebhookController<IngestContext>.playPath],
        allowed: .post)
    router.answerMethodNotAllowed(
        on: ["/healthz", ReadController<IngestContext>.entitlementsPath, ReadController<IngestContext>.historyPath,
             ReadController<IngestContext>.accessPath, CheckoutController<IngestContext>.statusPath,
             ProductsController<IngestContext>.path, BalanceController<IngestContext>.balancesPath],
        allowed: .get)
    router.answerMethodNotAllowed(on: [BalanceController<IngestContext>.transactionsPath], allowed: .get, .post)
    if settings.stripeSecrets.isEmpty { logger.warning("STRIPE_WEBHOOK_SECRETS is not set: the Stripe endpoint answers 503") }
    if let roots = settings.appleRoots {
        logger.info("Apple payloads must chain to \(roots.summary)")
    } else {
        logger.warning("APPLE_BUNDLE_IDS is not set: the Apple endpoints answer 503")
    }
    if let push = settings.googlePush {
        logger.info("Google Play pushes must be signed by Google for \(push.serviceAccount), packages \(push.packageNames.sorted())")
    } else {
        logger.info("GOOGLE_PLAY_PACKAGE_NAMES is not set: the Google Play endpoint answers 503")
    }
    if settings.apiKeys.isEmpty { logger.warning("API_KEYS is not set: the read API answers 401") }
    if settings.eventProof == nil {
        logger.warning("EVENT_SIGNING_KEY is not set: stored rows carry no proof, and the worker trusts whatever the database holds")
    }
    return router
}

/// The web checkout's routes: Stripe called through its own gate and timeout (docs/DESIGN.md).
func checkoutController(
    settings: IngestSettings, client: PostgresClient, apiKeys: APIKeyCheck, database: DatabaseCalls, changes: UserChanges?, logger: Logger
) -> CheckoutController<IngestContext> {
    let store = CheckoutStore(client: client, logger: logger)
    let maker = settings.checkout.map { checkout in
        let stripe = StripeCheckoutAPI(
            call: ProviderCall(
                http: .shared, provider: "Stripe", timeout: .init(checkout.timeout), maximumAttempts: 3, baseDelay: .milliseconds(200),
                maximumDelay: .seconds(2)),
            apiKey: checkout.apiKey, apiVersion: checkout.apiVersion, baseURL: checkout.baseURL)
        return CheckoutMaker(
            store: store, catalog: CatalogStore(client: client, logger: logger), stripe: stripe, prices: PriceCache(stripe: stripe),
            gate: CheckoutGate(limit: checkout.concurrency), settings: checkout, logger: logger)
    }
    return CheckoutController<IngestContext>(
        maker: maker, store: store, changes: changes, reader: StateReader(client: client, tokenProof: settings.eventProof, logger: logger),
        apiKeys: apiKeys, allowsClientKeys: settings.checkout?.allowsClientKeys ?? false, database: database,
        leeway: Double(settings.entitlementLeewaySeconds), sandboxAccess: settings.sandboxAccess)
}

extension Router {
    /// Answers `405` with an `Allow` header for the other common methods on these paths.
    func answerMethodNotAllowed(on paths: [RouterPath], allowed: HTTPRequest.Method...) {
        let others: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete].filter { !allowed.contains($0) }
        let names = allowed.map(\.rawValue).joined(separator: ", ")
        for path in paths {
            for method in others {
                on(path, method: method) { request, _ -> Response in
                    throw APIError(
                        .methodNotAllowed, code: "method_not_allowed",
                        message: "\(request.method) is not allowed here; use \(names)", headers: [.allow: names])
                }
            }
        }
    }
}
