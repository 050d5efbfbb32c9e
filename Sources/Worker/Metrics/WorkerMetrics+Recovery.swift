// SPDX-License-Identifier: Apache-2.0
import Prometheus

/// The recovery and reconciliation metrics (docs/recovery.md):
///
/// | metric | labels |
/// |---|---|
/// | `sluice_recovery_events_total` | `source`, `result` (`stored`, `already_stored`, `rejected`) |
/// | `sluice_recovery_last_success_timestamp_seconds` | `stream`: when its last window was stored whole |
/// | `sluice_recovery_checkpoint_lag_seconds` | `stream`: how far behind now its checkpoint is |
/// | `sluice_reconciliations_total` | `outcome` (`unchanged`, `corrected`, `skipped`) |
/// | `sluice_provider_api_errors_total` | `provider`, `status` (`0` for no answer) |
extension WorkerMetrics {
    private static func descriptor(_ subsystem: String?, _ metric: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "sluice", subsystem: subsystem, metricName: metric, unitName: unit, helpText: help)
    }

    func countRecovered(source: String, _ report: RecoveryReport) {
        for (result, count) in [("stored", report.stored), ("already_stored", report.alreadyStored), ("rejected", report.rejectedCount)] {
            registry.makeCounter(
                descriptor: Self.descriptor("recovery", "events", unit: "total", help: "Events recovered from provider APIs, by result"),
                labels: [("source", source), ("result", result)]
            ).increment(by: Int64(count))
        }
    }

    func recordCheckpoint(stream: String, lagSeconds: Double, succeededAt: Double?) {
        registry.makeGauge(
            descriptor: Self.descriptor("recovery", "checkpoint_lag", unit: "seconds", help: "How far behind now a recovery stream's checkpoint is"),
            labels: [("stream", stream)]
        ).set(to: lagSeconds)
        if let succeededAt {
            registry.makeGauge(
                descriptor: Self.descriptor(
                    "recovery", "last_success_timestamp", unit: "seconds", help: "When a recovery stream last stored a whole window"),
                labels: [("stream", stream)]
            ).set(to: succeededAt)
        }
    }

    func countReconciliation(_ outcome: Reconciler.Outcome) {
        registry.makeCounter(
            descriptor: Self.descriptor(nil, "reconciliations", unit: "total", help: "Entitlements checked against the provider, by outcome"),
            labels: [("outcome", outcome.rawValue)]
        ).increment()
    }

    func countProviderError(provider: String, status: Int) {
        registry.makeCounter(
            descriptor: Self.descriptor("provider_api", "errors", unit: "total", help: "Provider API answers that were not a success"),
            labels: [("provider", provider), ("status", String(status))]
        ).increment()
    }
}
