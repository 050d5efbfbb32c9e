// SPDX-License-Identifier: Apache-2.0
import Prometheus

/// The metrics of outgoing events and endpoints.
///
/// | metric | labels |
/// |---|---|
/// | `sluice_outgoing_events_total` | `type` |
/// | `sluice_endpoints_disabled_total` | `endpoint` (`ep_<id>`), `reason` (`failing`) |
extension WorkerMetrics {
    private static var outgoingEvents: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "sluice", subsystem: "outgoing", metricName: "events", unitName: "total",
            helpText: "Outgoing events written, by type")
    }
    private static var endpointsDisabled: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "sluice", subsystem: "endpoints", metricName: "disabled", unitName: "total",
            helpText: "Endpoints disabled by the worker after failing continuously for ENDPOINT_DISABLE_AFTER")
    }

    func countOutgoingEvent(type: String) {
        registry.makeCounter(descriptor: Self.outgoingEvents, labels: [("type", type)]).increment()
    }

    func countEndpointDisabled(endpoint: String) {
        registry.makeCounter(descriptor: Self.endpointsDisabled, labels: [("endpoint", endpoint), ("reason", "failing")]).increment()
    }
}
