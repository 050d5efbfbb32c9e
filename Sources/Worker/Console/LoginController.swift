// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging

/// Signing in with an operator key, and out.
struct LoginController: Sendable {
    let keys: OperatorKeys
    let renderer: ConsoleRenderer

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/login") { request, context in
            context.session != nil
                ? ConsoleRenderer.redirect("/")
                : renderer.page("login", title: "Sign in", section: nil, request: request, context: context)
        }
        router.post("/login") { request, context in
            guard let key = context.form["key"], let index = keys.index(of: key) else {
                context.logger.notice("console sign-in refused: unknown operator key")
                return renderer.page(
                    "login", title: "Sign in", section: nil, request: request, context: context,
                    values: ["error": "That is not an operator key."], status: .unauthorized)
            }
            let (_, cookie) = ConsoleSessionToken.issue(keyIndex: index, keys: keys, now: Date())
            context.logger.notice("console sign-in", metadata: ["operator_key": "\(index + 1)"])
            var response = ConsoleRenderer.redirect("/")
            response.setCookie(Self.cookie(cookie, maxAge: Int(ConsoleSessionToken.lifetime)))
            return response
        }
        router.post("/logout") { _, _ in
            var response = ConsoleRenderer.redirect("/login")
            response.setCookie(Self.cookie("", maxAge: 0))
            return response
        }
        router.get("/static/console.css") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/css; charset=utf-8"],
                body: .init(byteBuffer: .init(string: ConsoleStylesheet.css)))
        }
    }

    /// The session cookie: only over HTTPS (browsers count `localhost` as secure too), never
    /// readable by scripts, never sent with a request another site starts.
    static func cookie(_ value: String, maxAge: Int) -> Cookie {
        Cookie(name: OperatorAuthMiddleware.cookieName, value: value, maxAge: maxAge, path: "/", secure: true, httpOnly: true, sameSite: .strict)
    }
}
