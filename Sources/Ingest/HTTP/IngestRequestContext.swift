// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import NIOCore

/// The request context of every `ingest` route: Hummingbird's basics and the connection's peer,
/// which the client address's rate limit counts by.
struct IngestRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
