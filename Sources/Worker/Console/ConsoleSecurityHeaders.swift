// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird

/// Headers on every console response: no inline script or style can run (CSP), no framing, no
/// sniffing, no referrer to other sites, nothing cached.
struct ConsoleSecurityHeaders<Context: RequestContext>: RouterMiddleware {
    static var headers: HTTPFields {
        [
            .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; form-action 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            // `same-origin`, not `no-referrer`: with no-referrer, browsers post forms with `Origin: null`.
            HTTPField.Name("Referrer-Policy")!: "same-origin",
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
            HTTPField.Name("Cross-Origin-Resource-Policy")!: "same-origin",
            .cacheControl: "no-store",
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}
