// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Logging
import Shared

/// Pages (GET) get `DATABASE_TIMEOUT_SECONDS`; past it, or when no connection can be made, the
/// console answers `503` with a page that says the database cannot be reached and why, instead of
/// an empty `500` a minute later (issue 38). Actions are not time-limited (a reconcile calls the
/// providers, a rebuild may take long), but one that finds the database gone says so too.
struct ConsoleDatabaseErrorPage: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    let limit: Duration
    let renderer: ConsoleRenderer

    /// The next handler, which is not `Sendable`, handed to the timed child task that runs it;
    /// ``withCancellingTimeout(_:_:)`` waits for that task, so it never outlives the call.
    private struct Handler: @unchecked Sendable {
        let next: (Request, Context) async throws -> Response
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Pages read; actions (POST) may call providers or run long rebuilds, and are not cut short.
        let reads = request.method == .get || request.method == .head
        do {
            guard reads else { return try await next(request, context) }
            return try await withoutActuallyEscaping(next) { next in
                let handler = Handler(next: next)
                return try await withCancellingTimeout(limit) { try await handler.next(request, context) }
            }
        } catch where DatabaseProblem.isUnavailability(error) {
            context.logger.warning("console page answered 503: the database cannot be reached", metadata: [
                "error_type": "\(DatabaseProblem.typeName(of: error))"])
            return renderer.page(
                MessagePage(
                    lines: [
                        "The database cannot be reached: \(DatabaseProblem.sentence(error, timeout: limit)).",
                        reads
                            ? "The console reconnects by itself: reload this page once the database answers."
                            : "What the action had done before the database went away stays done; look at the page again once the database answers.",
                    ],
                    back: request.uri.path),
                title: "The database cannot be reached", section: nil, request: request, context: context, status: .serviceUnavailable)
        }
    }
}
