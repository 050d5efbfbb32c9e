// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import Shared

/// Signing in with an operator key, and out.
///
/// Sign-in attempts are limited per client address (``signInLimit``), checked before the key:
/// operator keys are long enough that guessing is hopeless, and the limit keeps it so.
struct LoginController: Sendable {
    let keys: OperatorKeys
    let sessions: ConsoleSessions
    let renderer: ConsoleRenderer
    /// Sign-in attempts by client address.
    var signIns = RateLimiter(Self.signInLimit)

    /// Ten attempts at once, then one every six seconds, per client address.
    static let signInLimit = RateLimiter.StateMachine.Limit(perSecond: 1.0 / 6, burst: 10)

    func addRoutes(to router: Router<ConsoleRequestContext>) {
        router.get("/login", use: form)
        router.post("/login", use: signIn)
        router.post("/logout", use: signOut)
        router.get("/static/console.css", use: stylesheet)
    }

    @Sendable func form(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        context.session != nil
            ? ConsoleRenderer.redirect("/")
            : renderer.page(LoginPage(), title: "Sign in", section: nil, request: request, context: context)
    }

    @Sendable func signIn(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        if case .limited(let seconds) = signIns.take(address) {
            context.logger.notice("console sign-in refused: too many attempts", metadata: ["address": "\(address)"])
            var response = renderer.page(
                LoginPage(error: "Too many sign-in attempts from this address; try again in \(seconds) s."), title: "Sign in",
                section: nil, request: request, context: context, status: .tooManyRequests)
            response.headers[.retryAfter] = "\(seconds)"
            return response
        }
        guard let key = context.form["key"], let index = keys.index(of: key) else {
            context.logger.notice("console sign-in refused: unknown operator key")
            return renderer.page(
                LoginPage(error: "That is not an operator key."), title: "Sign in", section: nil, request: request, context: context,
                status: .unauthorized)
        }
        let (token, cookie) = ConsoleSessionToken.issue(keyIndex: index, keys: keys, now: Date())
        try await sessions.begin(token)
        context.logger.notice("console sign-in", metadata: ["operator_key": "\(index + 1)"])
        var response = ConsoleRenderer.redirect("/")
        response.setCookie(Self.cookie(cookie, maxAge: Int(ConsoleSessionToken.lifetime)))
        return response
    }

    @Sendable func signOut(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        // Ended server-side: a copy of the cookie is refused by every replica from now on.
        if let session = context.session { try await sessions.end(session) }
        var response = ConsoleRenderer.redirect("/login")
        response.setCookie(Self.cookie("", maxAge: 0))
        return response
    }

    @Sendable func stylesheet(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8"], body: .init(byteBuffer: .init(string: ConsoleStylesheet.css)))
    }

    /// The session cookie: only over HTTPS (browsers count `localhost` as secure too), never
    /// readable by scripts, never sent with a request another site starts.
    static func cookie(_ value: String, maxAge: Int) -> Cookie {
        Cookie(name: OperatorAuthMiddleware.cookieName, value: value, maxAge: maxAge, path: "/", secure: true, httpOnly: true, sameSite: .strict)
    }
}
