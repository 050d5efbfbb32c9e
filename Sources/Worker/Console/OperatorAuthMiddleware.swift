// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The console's gate. Every page but the sign-in page and the stylesheet needs a valid session
/// cookie, signed by a current operator key, of a session still live server-side
/// (``ConsoleSessions``: not signed out, not idle too long); a GET without one is sent to `/login`. Every POST must come from the console's own
/// origin (`Origin`, `Sec-Fetch-Site`), and every POST but the sign-in must carry the session's
/// CSRF token; in read-only mode only signing in and out may be posted.
struct OperatorAuthMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    /// `__Host-`: the browser keeps it only if it is `Secure`, for `/`, and set by this very host
    /// (no `Domain`), so no other host or path can set or shadow it.
    static let cookieName = "__Host-sluice_console"
    /// The largest form the console accepts.
    static let maximumFormBytes = 64 * 1024

    let keys: OperatorKeys
    let sessions: ConsoleSessions
    let readOnly: Bool
    let renderer: ConsoleRenderer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        var context = context
        let path = request.uri.path
        if let cookie = request.cookies[Self.cookieName]?.value, let token = ConsoleSessionToken.verify(cookie, keys: keys, now: Date()) {
            context.session = try await sessions.touch(token) ? token : nil
        }
        if request.method == .post {
            guard Self.isSameOrigin(request.headers, authority: request.head.authority) else {
                return refusal(.forbidden, "This form was posted from another site.", request: request, context: context)
            }
            let body = try await request.collectBody(upTo: Self.maximumFormBytes)
            context.form = FormFields(String(buffer: body))
        }
        if path == "/login" || path.hasPrefix("/static/") { return try await next(request, context) }
        guard let session = context.session else {
            if request.method == .get || request.method == .head { return ConsoleRenderer.redirect("/login") }
            return refusal(.unauthorized, "Your session has ended: sign in again.", request: request, context: context)
        }
        if request.method == .post {
            guard session.acceptsCSRF(context.form["csrf"], keys: keys) else {
                context.logger.notice("console form refused: missing or wrong CSRF token", metadata: ["path": "\(path)"])
                return refusal(.forbidden, "This form has expired or did not come from this console: reload the page and try again.",
                    request: request, context: context)
            }
            if readOnly && path != "/logout" {
                return refusal(.forbidden, "This console is read-only: actions are turned off.", request: request, context: context)
            }
        }
        return try await next(request, context)
    }

    private func refusal(_ status: HTTPResponse.Status, _ text: String, request: Request, context: Context) -> Response {
        renderer.page(
            MessagePage(lines: [text], back: status == .unauthorized ? "/login" : "/"), title: status == .unauthorized ? "Sign in again" : "Refused",
            section: nil, request: request, context: context, status: status)
    }

    /// Whether a POST came from a page of this console: a browser's `Sec-Fetch-Site` says
    /// same-origin (or none: typed by the user), and an `Origin` names the host the request went to
    /// (`authority`: HTTP/1's `Host`, which swift-http-types moves out of the header fields).
    static func isSameOrigin(_ headers: HTTPFields, authority: String?) -> Bool {
        if let site = headers[HTTPField.Name("Sec-Fetch-Site")!], !["same-origin", "none"].contains(site) { return false }
        guard let origin = headers[HTTPField.Name("Origin")!] else { return true }
        guard let url = URL(string: origin), let host = url.host, let requestHost = authority else { return false }
        let originHost = url.port.map { "\(host):\($0)" } ?? host
        return originHost.lowercased() == requestHost.lowercased()
    }
}
