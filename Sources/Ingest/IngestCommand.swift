// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals
import Shared

/// `ingest`: the HTTP receiver. Everything it needs comes from the environment.
@main
struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Sluice's receiver: verifies Stripe and Apple webhooks, stores them, answers 2xx once committed.",
        discussion: """
            Stops on SIGTERM or SIGINT: stops accepting, finishes in-flight requests (at most 30 s), exits 0 within 40 s.
            Exit codes: 0 success, 1 failure (reason on stderr), 2 bad usage.

            \(IngestSettings.help)
            """)

    static func main() async {
        await CommandLineEntry.main(IngestCommand.self, name: "ingest")
    }

    func run() async throws {
        let settings = try IngestSettings(environment: EnvironmentValues.process())
        LoggingSetup.bootstrap(level: settings.logLevel, format: settings.logFormat)
        let logger = Logger(label: "ingest")
        let app = try buildApplication(settings: settings, logger: logger)
        if let warning = settings.sandboxAccess.startWarning { logger.log(level: settings.sandboxAccess.startLogLevel, "\(warning)") }
        logger.info("ingest starting", metadata: ["host": "\(settings.host)", "port": "\(settings.port)"])
        // A listener that cannot bind ends the process at once, naming its variable.
        var group = ServiceGroupConfiguration(
            services: [.init(service: NamedListener(app, address: settings.publicAddress))], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        group.maximumGracefulShutdownDuration = .seconds(30)
        try await StopDeadline.run(group, logger: logger)
    }
}
