// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// What the console's pages act through — the same types the `worker` commands use.
struct ConsoleServices: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// `ENTITLEMENT_LEEWAY_SECONDS` and `SANDBOX_ACCESS`, for `is_active` as the read API says it.
    let leeway: TimeInterval
    let sandboxAccess: SandboxAccess
    /// `EVENT_SIGNING_KEY`: which stored rows and `appAccountToken` registrations count.
    let eventProof: EventProof?
    let rebuilder: EntityRebuilder
    /// `nil` when no provider API credentials are configured (reconciliation is off).
    let reconciler: Reconciler?

    var deadLetters: DeadLetters { DeadLetters(client: client, logger: logger) }
    var endpoints: EndpointStore { EndpointStore(client: client, logger: logger) }
}
