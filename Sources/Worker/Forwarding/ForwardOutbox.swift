// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import PostgresNIO
import Shared

/// What applying an event sends out, written inside the transaction that applies it (an outbox):
/// the outgoing events that announce its changes, and the raw Apple notification for the
/// endpoints that take it (`raw_apple`, and the `FORWARD_TARGETS` endpoints). Nothing leaves
/// unless the change committed.
struct ForwardOutbox: Sendable {
    /// `ENTITLEMENT_LEEWAY_SECONDS`: `is_active` in announcements reads as the read API's.
    let leeway: TimeInterval
    /// `SANDBOX_ACCESS`: whether a sandbox entitlement reads active in announcements, as in the read API.
    let sandboxAccess: SandboxAccess
    /// Called after a transaction that created deliveries committed, to wake this process's forwarder.
    let onCreated: @Sendable () -> Void
    /// The catalog's access levels, which each announced entitlement carries; `nil`: none.
    let catalog: CatalogGrants?

    init(leeway: TimeInterval, sandboxAccess: SandboxAccess, catalog: CatalogGrants? = nil, onCreated: @escaping @Sendable () -> Void) {
        self.leeway = leeway
        self.sandboxAccess = sandboxAccess
        self.catalog = catalog
        self.onCreated = onCreated
    }

    /// The announcer of the changes that applying `job` makes.
    ///
    /// - Parameter rawNotification: the environment of an App Store Server Notification, which the
    ///   `raw_apple` endpoints receive as it is; `nil` for anything else.
    func announcer(for job: ClaimedJob, rawNotification environment: PurchaseEnvironment? = nil, logger: Logger) async -> ChangeAnnouncer {
        let read = await catalog?.catalog() ?? CatalogGrants.Catalog()
        return ChangeAnnouncer(
            cause: EventCause(job: job), causeEventID: job.id, leeway: leeway, sandboxAccess: sandboxAccess, writer: OutgoingEventWriter(logger: logger),
            rawNotification: environment.map { .init(eventID: job.id, environment: $0) }, grants: read.grants, products: read.products)
    }
}

/// Announces the changes one applied event makes (``StateWriter``): for each entitlement or
/// transaction whose visible state changed, one outgoing event.
struct ChangeAnnouncer: Sendable {
    var cause: EventCause
    var causeEventID: Int64?
    var leeway: TimeInterval
    var sandboxAccess: SandboxAccess
    var writer: OutgoingEventWriter
    /// The notification applied, when `raw_apple` endpoints receive it.
    var rawNotification: OutgoingEventWriter.RawNotification?
    /// The time `is_active` is computed for, before and after.
    var now = Date()
    /// The catalog's access levels by product id, which each announced entitlement carries.
    var grants: [String: Set<String>] = [:]
    /// The catalog's products by every id a purchase may carry: the currencies each grants.
    var products: [String: CatalogProduct] = [:]
}
