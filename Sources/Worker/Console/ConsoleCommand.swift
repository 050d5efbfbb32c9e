// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared
import UnixSignals

/// `worker console [--read-only]`: the operator console, a small web server (docs/operations.md).
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Serve the operator console: queues, dead letters, customers and endpoints in a browser.",
        discussion: """
            Sign in with an operator key (OPERATOR_KEYS). Pages: the overview (both queues, the last \
            hour, recovery, endpoint health; it refreshes itself), dead letters (filter, read, replay, \
            discard), customers (look up by any id; entitlements, ledger and the timeline of every \
            event; reconcile, rebuild with a dry run first) and endpoints (deliveries; enable, disable, \
            resend, rotate the secret). Every action is confirmed and logged with the operator key's \
            number, never the key. Listens on 127.0.0.1:8090 unless told otherwise: put it behind \
            your VPN or a TLS proxy, never on the public internet. Stops on SIGTERM or SIGINT.

            \(ConsoleSettings.help)
            """)

    @Flag(name: .customLong("read-only"), help: "Show everything, change nothing: every action is refused.")
    var readOnly = false

    func run() async throws {
        let settings = try ConsoleSettings(environment: EnvironmentValues.process(), readOnly: readOnly)
        LoggingSetup.bootstrap(level: settings.logLevel, format: settings.logFormat)
        let logger = Logger(label: "worker.console")
        let client = try settings.database.makeClient(maximumConnections: 4, logger: logger)
        try await HTTPClient.withHTTPClient(configuration: .init(timeout: .init(connect: .seconds(5)))) { http in
            let handlers = EventHandlers.all(
                logger: logger, stripeAccounts: settings.stripeAccounts, transferBehavior: settings.transferBehavior, leeway: settings.leeway
            ).compactMapValues { $0 as? any EventApplier }
            let recovery = Recovery(
                settings: settings.recovery, stripeAccounts: settings.stripeAccounts, http: http, client: client, metrics: nil, logger: logger)
            let services = ConsoleServices(
                client: client, logger: logger, leeway: settings.leeway, sandboxAccess: settings.sandboxAccess,
                eventProof: settings.recovery.eventProof,
                rebuilder: EntityRebuilder(
                    client: client, handlers: handlers, proof: settings.recovery.eventProof, leeway: settings.leeway,
                    sandboxAccess: settings.sandboxAccess, logger: logger),
                reconciler: recovery.isOff ? nil : recovery.reconciler)
            let application = try ConsoleApplication.build(
                services: services, keys: settings.keys, readOnly: settings.readOnly, host: settings.host, port: settings.port,
                databaseTimeout: settings.database.timeout, logger: logger)
            logger.info("console starting", metadata: [
                "address": "\(settings.host):\(settings.port)", "read_only": "\(settings.readOnly)",
            ])
            var group = ServiceGroupConfiguration(
                services: [
                    .init(service: client),
                    .init(service: DatabaseReachability(
                        client: client, database: settings.database, meanwhile: "pages that need it answer 503 meanwhile", logger: logger)),
                    // A port that cannot be bound cancels the group: the process exits naming CONSOLE_PORT.
                    .init(service: NamedListener(application, address: .init(
                        host: settings.host, port: settings.port, hostVariable: "CONSOLE_HOST", portVariable: "CONSOLE_PORT"))),
                ], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            group.maximumGracefulShutdownDuration = .seconds(30)
            try await StopDeadline.run(group, logger: logger)
        }
    }
}
