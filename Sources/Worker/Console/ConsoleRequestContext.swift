// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import NIOCore

/// The request context of the console: Hummingbird's basics, the operator's session once the
/// auth middleware has checked the cookie, and the fields of a posted form.
struct ConsoleRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The signed-in operator's session; `nil` on the login page and static files.
    var session: ConsoleSessionToken?
    /// A POST's form fields (read once by the middleware, which checks the CSRF token among them).
    var form = FormFields()
    /// The connection's peer, for the sign-in limit (behind a proxy, the proxy's).
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
