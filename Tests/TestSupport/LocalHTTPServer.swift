// SPDX-License-Identifier: Apache-2.0
public import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A real HTTP server on a free local port, serving `router` for the duration of `body`: the base
/// of the tests' stand-ins for the servers Sluice calls.
public enum LocalHTTPServer {
    /// - Parameter body: gets the base URL, `http://127.0.0.1:<port>`.
    public static func run<Result: Sendable>(
        _ router: Router<BasicRequestContext>, _ body: @Sendable @escaping (String) async throws -> Result
    ) async throws -> Result {
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "stand-in")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await app.runService(gracefulShutdownSignals: [])
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else { throw CancellationError() }
            defer { group.cancelAll() }
            return try await body("http://127.0.0.1:\(port)")
        }
    }
}
