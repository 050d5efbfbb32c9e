// SPDX-License-Identifier: Apache-2.0
import Prometheus
import Shared

/// The worker's Prometheus metrics, served at `/metrics` on `METRICS_PORT`.
///
/// | metric | labels |
/// |---|---|
/// | `sluice_worker_jobs_total` | `queue`, `outcome` (`done`, `retry`, `dead`, `lease_lost`) |
/// | `sluice_worker_attempt_duration_seconds` | histogram by `queue` |
/// | `sluice_worker_deliveries_total` | `target` (without credentials or query), `status_class` (`2xx`…`5xx`, `timeout`, `connection_error`) |
/// | `sluice_worker_delivery_duration_seconds` | histogram by `target` |
/// | `sluice_queue_jobs` | `queue`, `state` (`pending`, `running`, `dead`), sampled at each scrape |
/// | `sluice_queue_oldest_runnable_age_seconds` | `queue`, sampled at each scrape |
/// | `sluice_queue_paused` | `queue`: 1 while paused |
final class WorkerMetrics: Sendable {
    /// What became of one attempt.
    enum Outcome: String, CaseIterable {
        case done, retry, dead
        case leaseLost = "lease_lost"
    }

    let registry: PrometheusCollectorRegistry

    private static let latencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
    ]

    private static func name(_ subsystem: String, _ metric: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "sluice", subsystem: subsystem, metricName: metric, unitName: unit, helpText: help)
    }

    private static var jobs: MetricNameDescriptor { name("worker", "jobs", unit: "total", help: "Job attempts, by queue and outcome") }
    private static var attemptDuration: MetricNameDescriptor {
        name("worker", "attempt_duration", unit: "seconds", help: "Time one attempt of one job took, handler and completion")
    }
    private static var deliveries: MetricNameDescriptor {
        name("worker", "deliveries", unit: "total", help: "Forwarding attempts, by target and HTTP status class")
    }
    private static var deliveryDuration: MetricNameDescriptor {
        name("worker", "delivery_duration", unit: "seconds", help: "Time from sending a forward until its answer")
    }
    private static var depth: MetricNameDescriptor { name("queue", "jobs", help: "Jobs in a queue by state") }
    private static var oldestAge: MetricNameDescriptor {
        name("queue", "oldest_runnable_age", unit: "seconds", help: "How long the oldest runnable job has waited")
    }
    private static var paused: MetricNameDescriptor { name("queue", "paused", help: "1 while the queue is paused") }
    private static var playUnacknowledged: MetricNameDescriptor {
        name("play", "unacknowledged", help: "Google Play purchases still unacknowledged two days after they were made (Google refunds them on the third)")
    }

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        // Every queue and outcome is exported from the start, so rates and alerts see zeros, not gaps.
        for queue in QueueName.all {
            for outcome in Outcome.allCases { _ = jobCounter(queue, outcome) }
            _ = attemptHistogram(queue)
        }
    }

    func countAttempt(_ queue: QueueName, _ outcome: Outcome, duration: Duration) {
        jobCounter(queue, outcome).increment()
        attemptHistogram(queue).record(duration)
    }

    func countDelivery(target: String, statusClass: String, duration: Duration) {
        registry.makeCounter(descriptor: Self.deliveries, labels: [("target", target), ("status_class", statusClass)]).increment()
        registry.makeDurationHistogram(descriptor: Self.deliveryDuration, labels: [("target", target)], buckets: Self.latencyBuckets)
            .record(duration)
    }

    /// Sets the gauge of Google Play purchases unacknowledged for two days.
    func setPlayUnacknowledged(_ count: Int) {
        registry.makeGauge(descriptor: Self.playUnacknowledged).set(to: Double(count))
    }

    /// Sets the queue gauges from a fresh sample.
    func recordDepth(_ depth: QueueStatistics.Depth, of queue: QueueName, paused: Bool) {
        for (state, count) in [("pending", depth.pending), ("running", depth.running), ("dead", depth.dead)] {
            registry.makeGauge(descriptor: Self.depth, labels: [("queue", queue.rawValue), ("state", state)]).set(to: Double(count))
        }
        registry.makeGauge(descriptor: Self.oldestAge, labels: [("queue", queue.rawValue)]).set(to: depth.oldestRunnableAgeSeconds)
        registry.makeGauge(descriptor: Self.paused, labels: [("queue", queue.rawValue)]).set(to: paused ? 1 : 0)
    }

    private func jobCounter(_ queue: QueueName, _ outcome: Outcome) -> Counter {
        registry.makeCounter(descriptor: Self.jobs, labels: [("queue", queue.rawValue), ("outcome", outcome.rawValue)])
    }

    private func attemptHistogram(_ queue: QueueName) -> DurationHistogram {
        registry.makeDurationHistogram(descriptor: Self.attemptDuration, labels: [("queue", queue.rawValue)], buckets: Self.latencyBuckets)
    }
}
