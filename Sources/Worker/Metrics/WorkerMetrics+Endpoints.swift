// SPDX-License-Identifier: Apache-2.0
import Prometheus

/// The metrics of endpoints.
///
/// | metric | labels |
/// |---|---|
/// | `sluice_endpoints_disabled_total` | `endpoint` (`ep_<id>`), `reason` (`failing`) |
extension WorkerMetrics {
    private static var endpointsDisabled: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "sluice", subsystem: "endpoints", metricName: "disabled", unitName: "total",
            helpText: "Endpoints disabled by the worker after failing continuously for ENDPOINT_DISABLE_AFTER")
    }

    func countEndpointDisabled(endpoint: String) {
        registry.makeCounter(descriptor: Self.endpointsDisabled, labels: [("endpoint", endpoint), ("reason", "failing")]).increment()
    }
}
