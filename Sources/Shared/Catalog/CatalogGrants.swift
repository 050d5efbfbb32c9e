// SPDX-License-Identifier: Apache-2.0
public import Foundation
public import Logging
public import PostgresNIO
import Synchronization

/// The access levels each product id grants (``AccessLevels/grants(of:)``), read from the catalog
/// at most every ``lifetime``: what the worker's outgoing events say an entitlement gives, without
/// a catalog query per applied event. A catalog change shows in events within ``lifetime``; the
/// read API reads the catalog with each request.
public final class CatalogGrants: Sendable {
    private let client: PostgresClient
    private let logger: Logger
    public let lifetime: TimeInterval
    private let kept = Mutex<(grants: [String: Set<String>], readAt: Date?)>(([:], nil))

    public init(client: PostgresClient, lifetime: TimeInterval = 30, logger: Logger) {
        self.client = client
        self.lifetime = lifetime
        self.logger = logger
    }

    /// The grants, read again when older than ``lifetime``; the ones read before (or none) when the
    /// catalog cannot be read now.
    public func current(now: Date = Date()) async -> [String: Set<String>] {
        let (grants, readAt) = kept.withLock { ($0.grants, $0.readAt) }
        if let readAt, now.timeIntervalSince(readAt) < lifetime { return grants }
        do {
            let fresh = AccessLevels.grants(of: try await CatalogStore(client: client, logger: logger).all())
            kept.withLock { $0 = (fresh, now) }
            return fresh
        } catch {
            logger.warning("the catalog could not be read; events keep the access levels read before", metadata: ["error": "\(String(reflecting: error))"])
            return grants
        }
    }
}

extension AccessLevels {
    /// The access levels `productID` grants, sorted: an entitlement's `access_levels`.
    public static func of(_ productID: String, in grants: [String: Set<String>]) -> [String] {
        (grants[productID] ?? []).sorted()
    }
}
