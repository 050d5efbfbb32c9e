// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Logging
import Shared

/// The console's web application: the gate, the security headers and the sections, each a
/// controller that adds its routes (a route group per section).
enum ConsoleApplication {
    static func router(
        services: ConsoleServices, keys: OperatorKeys, readOnly: Bool, databaseTimeout: Duration = .seconds(5),
        templates: [ConsoleTemplate] = ConsoleTemplate.allCases
    ) throws -> Router<ConsoleRequestContext> {
        let renderer = try ConsoleRenderer(readOnly: readOnly, keys: keys, templates: templates)
        let router = Router(context: ConsoleRequestContext.self)
        router.add(middleware: ConsoleSecurityHeaders())
        // Before the gate: its session check reads the database too.
        router.add(middleware: ConsoleDatabaseErrorPage(limit: databaseTimeout, renderer: renderer))
        let sessions = ConsoleSessions(client: services.client, limit: databaseTimeout, logger: services.logger)
        router.add(middleware: OperatorAuthMiddleware(keys: keys, sessions: sessions, readOnly: readOnly, renderer: renderer))
        LoginController(keys: keys, sessions: sessions, renderer: renderer).addRoutes(to: router)
        OverviewController(services: services, renderer: renderer).addRoutes(to: router)
        DeadLettersController(services: services, renderer: renderer).addRoutes(to: router)
        CustomersController(services: services, renderer: renderer).addRoutes(to: router)
        EndpointsController(services: services, renderer: renderer).addRoutes(to: router)
        ProductsConsoleController(services: services, renderer: renderer).addRoutes(to: router)
        return router
    }

    static func build(
        services: ConsoleServices, keys: OperatorKeys, readOnly: Bool, host: String, port: Int, databaseTimeout: Duration, logger: Logger
    ) throws -> some ApplicationProtocol {
        Application(
            router: try router(services: services, keys: keys, readOnly: readOnly, databaseTimeout: databaseTimeout),
            server: .http1(configuration: .init(idleTimeout: IdleConnections.timeout)),
            configuration: .init(address: .hostname(host, port: port), serverName: "sluice-console"),
            logger: logger)
    }
}
