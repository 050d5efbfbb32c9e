// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Shared

/// `worker run`: the pool, until SIGTERM or SIGINT.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the worker pool until SIGTERM/SIGINT.",
        discussion: """
            On SIGTERM or SIGINT it stops dequeuing, lets running jobs finish, and exits 0.

            \(WorkerSettings.help)
            """)

    func run() async throws {
        let settings = try WorkerSettings(environment: EnvironmentValues(ProcessInfo.processInfo.environment))
        LoggingSetup.bootstrap(level: settings.logLevel, format: settings.logFormat)
        let logger = Logger(label: "worker")
        let client = PostgresClient(
            configuration: try settings.database.clientConfiguration(maximumConnections: settings.concurrency + 4),
            backgroundLogger: logger)
        let pool = WorkerPool(
            queue: JobQueue(client: client, name: .events, configuration: settings.queue, logger: logger),
            handlers: EventHandlers.all(logger: logger),
            configuration: .init(concurrency: settings.concurrency),
            logger: logger)
        var group = ServiceGroupConfiguration(
            services: [.init(service: client), .init(service: pool)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        group.maximumGracefulShutdownDuration = .seconds(max(settings.queue.leaseSeconds, 30))
        logger.info("worker starting", metadata: ["concurrency": "\(settings.concurrency)"])
        try await ServiceGroup(configuration: group).run()
    }
}

/// The handlers of the events queue, by source.
enum EventHandlers {
    static func all(logger: Logger) -> [String: any JobHandler] {
        let apple = AppleEventHandler(logger: logger)
        return [
            EventSource.stripe.rawValue: StripeEventHandler(logger: logger),
            EventSource.apple.rawValue: apple,
            EventSource.storekit.rawValue: apple,
        ]
    }
}
