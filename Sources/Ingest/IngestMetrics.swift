// SPDX-License-Identifier: Apache-2.0
import Prometheus
import Shared

/// The receiver's Prometheus metrics, served at `/metrics`.
///
/// | metric | labels |
/// |---|---|
/// | `sluice_ingest_requests_total` | `route`, `status` |
/// | `sluice_ingest_rejections_total` | `source`, `reason` (bad_signature, expired, untrusted_chain, missing_oid, wrong_bundle, wrong_environment, malformed, too_large, …) |
/// | `sluice_ingest_events_total` | `source`, `result` (`stored`, `duplicate`) |
/// | `sluice_ingest_store_failures_total` | `source` |
/// | `sluice_ingest_store_duration_seconds` | histogram of the wait for the commit |
/// | `sluice_ingest_rate_limited_total` | `limit` (`per_key`, `per_address`): API requests answered `429` |
/// | `sluice_ingest_replica_lag_seconds` | how stale a read from `READ_DATABASE_URL` can be now; `-1` unknown (reads go to the primary) |
final class IngestMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let storeDuration: DurationHistogram
    private let replicaLag: Gauge
    private let requestCounters: LabeledCounters<RequestLabels>
    private let eventCounters: LabeledCounters<EventLabels>

    private struct RequestLabels: Hashable, Sendable {
        var route: String
        var status: Int
    }

    private struct EventLabels: Hashable, Sendable {
        var source: EventSource
        var result: StoreResult
    }

    private static func name(_ metric: String, unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "sluice", subsystem: "ingest", metricName: metric, unitName: unit, helpText: help)
    }

    private static var requests: MetricNameDescriptor { name("requests", unit: "total", help: "HTTP requests answered, by route and status") }
    private static var rejections: MetricNameDescriptor { name("rejections", unit: "total", help: "Requests refused by verification, by reason") }
    private static var events: MetricNameDescriptor { name("events", unit: "total", help: "Verified events, stored new or found already stored") }
    private static var storeFailures: MetricNameDescriptor { name("store_failures", unit: "total", help: "Verified events that could not be stored (answered 503)") }
    private static var rateLimited: MetricNameDescriptor { name("rate_limited", unit: "total", help: "API requests refused with 429, by limit") }
    private static var replicaLagName: MetricNameDescriptor {
        name("replica_lag", unit: "seconds", help: "How stale a read from the replica can be; -1 unknown (reads go to the primary)")
    }
    private static var storeDurationName: MetricNameDescriptor {
        name("store_duration", unit: "seconds", help: "Time from handing an event to the writer until its commit")
    }

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        requestCounters = LabeledCounters { labels in
            registry.makeCounter(descriptor: Self.requests, labels: [("route", labels.route), ("status", "\(labels.status)")])
        }
        eventCounters = LabeledCounters { labels in
            registry.makeCounter(descriptor: Self.events, labels: [("source", labels.source.rawValue), ("result", "\(labels.result)")])
        }
        replicaLag = registry.makeGauge(descriptor: Self.replicaLagName)
        storeDuration = registry.makeDurationHistogram(
            descriptor: Self.storeDurationName,
            buckets: [.microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                      .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5)])
        // Every rejection reason is exported from the start, so rates and alerts see zeros, not gaps.
        for source in EventSource.allCases {
            for reason in Rejection.Reason.all { _ = rejectionCounter(source: source, reason: reason) }
        }
        for limit in ["per_key", "per_address"] { _ = rateLimitedCounter(limit) }
    }

    func countRateLimited(limit: String) {
        rateLimitedCounter(limit).increment()
    }

    private func rateLimitedCounter(_ limit: String) -> Counter {
        registry.makeCounter(descriptor: Self.rateLimited, labels: [("limit", limit)])
    }

    func countRequest(route: String, status: Int) {
        requestCounters[RequestLabels(route: route, status: status)].increment()
    }

    func countRejection(source: EventSource, reason: Rejection.Reason) {
        rejectionCounter(source: source, reason: reason).increment()
    }

    func countEvent(source: EventSource, result: StoreResult) {
        eventCounters[EventLabels(source: source, result: result)].increment()
    }

    func countStoreFailure(source: EventSource) {
        registry.makeCounter(descriptor: Self.storeFailures, labels: [("source", source.rawValue)]).increment()
    }

    func recordStoreDuration(_ duration: Duration) {
        storeDuration.record(duration)
    }

    private func rejectionCounter(source: EventSource, reason: Rejection.Reason) -> Counter {
        registry.makeCounter(descriptor: Self.rejections, labels: [("source", source.rawValue), ("reason", reason.code)])
    }

    /// The replica's lag bound, or `nil` when unknown.
    func recordReplicaLag(_ seconds: Double?) {
        replicaLag.set(seconds ?? -1)
    }
}
