// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation
import Logging
import PostgresNIO
import Shared
import NIOFoundationCompat

/// How fast real `worker run` processes drain a backlog from the events queue, with 1, 2, 4…
/// processes, for two workloads over the same code path (dequeue, handler, completion):
/// - `noop`: Stripe events of a type Sluice only records (`customer.created`): the queue mechanism
///   with the least a handler can do (decode, one ledger row, complete);
/// - `mixed`: realistic mixed events through the real handlers: Stripe subscriptions and payments,
///   Apple subscriptions and renewals signed by a test PKI.
/// It also reports the events table's size when filled, when drained, and after `worker prune`
/// plus `VACUUM`. The baselines (bare SQL cycle via pgbench, pgqueuer) run in `scripts/bench-queue`.
@main
struct ApplyBenchmark: AsyncParsableCommand {
    enum Workload: String, ExpressibleByArgument, CaseIterable { case noop, mixed }

    static let configuration = CommandConfiguration(commandName: "ApplyBenchmark", abstract: "Events drained per second by `worker run` processes (needs DATABASE_URL).")

    @Option(help: "Events in the backlog.") var events = 50_000
    @Option(help: "Transactions in flight per process (WORKER_CONCURRENCY).") var concurrency = 16
    @Option(parsing: .upToNextOption, help: "Worker process counts to measure, each on a fresh backlog.") var processes = [1, 2, 4]
    @Option(parsing: .upToNextOption, help: "Workloads: noop, mixed.") var workloads = Workload.allCases
    @Option(help: "The worker binary.") var worker = ".build-release/release/worker"
    @Option(parsing: .upToNextOption, help: "WORKER_BATCH_SIZE values to measure, each on a fresh backlog (1: a transaction per event, the baseline).")
    var batchSizes = [1, 16]
    @Option(help: "The migrations to set the database up with (default: this checkout's sql/), to compare two versions of its functions.")
    var sql: String?
    @Option(parsing: .upToNextOption, help: "EVENT_SIGNING_KEY off and/or on, each on a fresh backlog (on: rows proven, the worker checks each).")
    var proofs = [Proofs.off]

    enum Proofs: String, ExpressibleByArgument, CaseIterable { case off, on }

    @Option(parsing: .upToNextOption, help: "Currency grants off, catalog, on and/or expiring, each on a fresh backlog (off: no catalog; catalog: the mixed workload's products in the catalog, granting nothing; on: they grant credits, so about half its events change a balance; expiring: the subscription's grants expire with their period, kept as lots).")
    var balances = [Balances.off]

    /// `off`: an empty catalog; `catalog`: the workload's products in it, granting no currency
    /// (what grants alone cost is `on` against this); `on`: they grant currencies; `expiring`: and
    /// the subscription's grants expire at the end of their period (kept as lots, docs/credits.md).
    enum Balances: String, ExpressibleByArgument, CaseIterable { case off, catalog, on, expiring }

    /// The key both the backlog's store and the workers use when proofs are on.
    static let proofKey = "apply-benchmark-event-signing-key-0123456789"

    func run() async throws {
        guard let text = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw ValidationError("DATABASE_URL is required (scripts/with-postgres sets one)")
        }
        let logger = { var l = Logger(label: "bench"); l.logLevel = .error; return l }()
        let server = try DatabaseURL(text)
        let signer = AppleJWSSigner(pki: try ApplePKI.generate(name: "Apply Bench"))
        print("drain: \(events) events, \(concurrency) in flight per worker process, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        for workload in workloads {
            let records = try workload == .noop ? Self.noopEvents(events) : Self.mixedEvents(events, signer: signer)
            for count in processes {
                for batchSize in batchSizes {
                    for proof in proofs {
                        var drains: [(Balances, Drain)] = []
                        for balance in balances {
                            drains.append((balance, try await measure(
                                server: server, logger: logger, workload: workload, records: records, processes: count, batchSize: batchSize,
                                proof: proof, balances: balance)))
                        }
                        for line in Self.balancesSummary(drains) { print(line) }
                    }
                }
            }
        }
    }

    /// One drain's figures: its rate, and the CPU it took an event, the worker's and
    /// PostgreSQL's together (`nil` when the server's is unknown: not on this machine).
    struct Drain {
        var rate: Double
        var cpuPerEvent: Double?
    }

    /// With grants measured on and off in one run (`--balances off on off on …`): each mode's mean
    /// rate against a baseline's, and each run against the baseline run just before it (the
    /// machine's noise between neighbouring runs is as large as the difference asked about). The
    /// baselines are `off` (no catalog) and `catalog` (the same products, granting nothing): grants
    /// alone are `on` against `catalog`. The pairs' ratios are also given as their mean with a 95 %
    /// confidence interval (``PairedRatios``): whether a target is met is read against it.
    ///
    /// A second line gives the same pairs by CPU: the baseline's CPU an event (worker and
    /// PostgreSQL) over the mode's, the rate the CPU allows where both are bound by it (two cores
    /// held by the worker and the server). It moves less than the rate with what else the shared
    /// machine runs, since time spent waiting for the cores is not counted.
    static func balancesSummary(_ drains: [(Balances, Drain)]) -> [String] {
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }
        let comparisons: [(Balances, Balances)] = [(.catalog, .off), (.on, .off), (.expiring, .off), (.on, .catalog), (.expiring, .catalog)]
        return comparisons.flatMap { mode, baseline -> [String] in
            let runs = drains.filter { $0.0 == mode }.map(\.1)
            let base = drains.filter { $0.0 == baseline }.map(\.1)
            guard !runs.isEmpty, !base.isEmpty else { return [] }
            var pairs: [(run: Drain, before: Drain)] = []
            for (index, drain) in drains.enumerated() where drain.0 == mode {
                if let before = drains[..<index].last(where: { $0.0 == baseline }) { pairs.append((drain.1, before.1)) }
            }
            let rates = pairs.map { $0.run.rate / $0.before.rate }
            var lines = [String(
                format: "SUMMARY balances %@/%@: mean %.0f / %.0f events/s = %.3f; each against the %@ run before it: %@%@",
                mode.rawValue, baseline.rawValue, mean(runs.map(\.rate)), mean(base.map(\.rate)), mean(runs.map(\.rate)) / mean(base.map(\.rate)),
                baseline.rawValue, rates.map { String(format: "%.3f", $0) }.joined(separator: " "),
                rates.isEmpty ? "" : "; pairs " + PairedRatios(rates).summary)]
            let runCPU = runs.compactMap(\.cpuPerEvent), baseCPU = base.compactMap(\.cpuPerEvent)
            let cpuPairs = pairs.compactMap { pair in pair.run.cpuPerEvent.flatMap { run in pair.before.cpuPerEvent.map { $0 / run } } }
            if !runCPU.isEmpty, !baseCPU.isEmpty, !cpuPairs.isEmpty {
                lines.append(String(
                    format: "SUMMARY balances %@/%@ by CPU (worker + PostgreSQL an event, the %@ run's over the %@'s): mean %.0f / %.0f µs = %.3f; pairs: %@; pairs %@",
                    mode.rawValue, baseline.rawValue, baseline.rawValue, mode.rawValue, mean(runCPU), mean(baseCPU), mean(baseCPU) / mean(runCPU),
                    cpuPairs.map { String(format: "%.3f", $0) }.joined(separator: " "), PairedRatios(cpuPairs).summary))
            }
            return lines
        }
    }

    /// Fills a fresh database with `records`, runs `processes` workers until every job is done,
    /// then prunes; prints one `RESULT` line and returns its rate and CPU.
    private func measure(
        server: DatabaseURL, logger: Logger, workload: Workload, records: [EventRecord], processes: Int, batchSize: Int, proof: Proofs,
        balances: Balances
    ) async throws -> Drain {
        let url = { var url = server; url.database = "sluice_apply_\(UInt32.random(in: 0...UInt32.max))"; return url }()
        let name = url.database
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger) }
        let filledBytes = try await DatabaseSession.with(url, logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate(directory: sql.map { URL(fileURLWithPath: $0) } ?? Self.sqlDirectory())
            let store = EventStore(client: client, proof: proof == .on ? try EventProof(secret: Self.proofKey) : nil, logger: logger)
            for start in stride(from: 0, to: records.count, by: 500) {
                _ = try await store.insert(Array(records[start..<min(start + 500, records.count)]))
            }
            if balances != .off {
                let grants = balances != .catalog
                let catalog = CatalogStore(client: client, logger: logger)
                _ = try await catalog.add(CatalogProduct(
                    id: "pro.monthly", type: .autoRenewable, currencyGrants: grants ? ["credits": 100] : [:],
                    currencyGrantsExpire: balances == .expiring))
                _ = try await catalog.add(CatalogProduct(
                    id: "pro.lifetime", type: .nonConsumable, currencyGrants: grants ? ["credits": 500, "gems": 5] : [:]))
            }
            try await client.query("VACUUM ANALYZE events", logger: logger)
            // Every run starts from a checkpoint: the fill's writes are flushed outside the timed
            // drain, and a checkpoint that the runs before filled up does not land in this one (a
            // run after two others measured up to 0.6× of the same work without this).
            do {
                try await client.query("CHECKPOINT", logger: logger)
            } catch {
                logger.warning("no CHECKPOINT before the drain (a superuser or pg_checkpoint may): runs may pay for each other's writes")
            }
            return try await Self.eventsTableBytes(client, logger: logger)
        }
        // The server's CPU is read from its postmaster, which counts each backend's once it ends:
        // only when the server runs on this machine (else nil, and left out of the report).
        let postmaster = try await DatabaseSession.with(url, logger: logger) { client -> Int? in
            for try await pid in try await client.query("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) {
                return ProcessCPU.parent(of: Int(pid))
            }
            return nil
        }
        let serverCPUBefore = postmaster.flatMap { ProcessCPU.secondsWithEndedChildren(pid: $0) }
        let workers = try (0..<processes).map { _ in try startWorker(url: url, batchSize: batchSize, proof: proof) }
        let started = ContinuousClock.now
        let (done, failed) = try await DatabaseSession.with(url, logger: logger) { client -> (Int64, Int64) in
            while true {
                var counts: (Int64, Int64) = (0, 0)
                for try await row in try await client.query(
                    "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'dead' OR attempts > 1) FROM events",
                    logger: logger
                ).decode((Int64, Int64).self) {
                    counts = row
                }
                if counts.0 + counts.1 >= Int64(records.count) || started.duration(to: .now) > .seconds(900) { return counts }
                // Not more often: each count scans the queue, CPU the workers being measured would have.
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        let elapsed = started.duration(to: .now)
        // The rate stops at the last event applied; the CPU also counts announcing what it
        // granted, which the announcer finishes within a pass or two (once a second). An older
        // `--sql` without the due queue (before sql/0044) has nothing to wait for.
        try await DatabaseSession.with(url, logger: logger) { client in
            var queued = false
            for try await exists in try await client.query(
                "SELECT to_regclass('balance_announcements_due') IS NOT NULL", logger: logger
            ).decode(Bool.self) {
                queued = exists
            }
            guard queued else { return }
            for _ in 0..<120 {
                var due: Int64 = 0
                for try await count in try await client.query("SELECT count(*) FROM balance_announcements_due", logger: logger).decode(Int64.self) {
                    due = count
                }
                if due == 0 { return }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        let peakRSS = workers.compactMap { ProcessMemory.peakRSSMiB(pid: Int($0.processIdentifier)) }.max() ?? 0
        let workerCPU = workers.compactMap { ProcessCPU.seconds(pid: Int($0.processIdentifier)) }.reduce(0, +)
        for worker in workers { worker.terminate(); worker.waitUntilExit() }
        // The workers' backends end as their connections close; the postmaster then counts them.
        try await Task.sleep(for: .milliseconds(500))
        let serverCPUAfter = postmaster.flatMap { ProcessCPU.secondsWithEndedChildren(pid: $0) }
        let serverCPU: Double? = if let before = serverCPUBefore, let after = serverCPUAfter { after - before } else { nil }
        let (drainedBytes, prunedBytes) = try await DatabaseSession.with(url, logger: logger) { client in
            let drained = try await Self.eventsTableBytes(client, logger: logger)
            try await runWorker(["prune", "--older-than", "1s"], url: url, after: .seconds(1.1))
            try await client.query("VACUUM events", logger: logger)
            return (drained, try await Self.eventsTableBytes(client, logger: logger))
        }
        try await DatabaseSession.with(server, logger: logger) { try await $0.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger) }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(done) / seconds
        let cpuPerEvent = done > 0 ? workerCPU * 1e6 / Double(done) : 0
        let serverCPUPerEvent = serverCPU.map { done > 0 ? String(format: "%.0f", $0 * 1e6 / Double(done)) : "0" } ?? "unknown"
        func mib(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
        print(String(
            format: "  %@, %d process(es), batch %d, proofs %@, balances %@: %6.0f events/s (%lld done, %lld failed or retried, %.1f s); events table %@ MiB filled, %@ drained, %@ after prune + VACUUM; worker peak RSS %.0f MiB, worker CPU %.0f µs an event, PostgreSQL CPU %@ µs an event",
            workload.rawValue, processes, batchSize, proof.rawValue, balances.rawValue, rate, done, failed, seconds, mib(filledBytes), mib(drainedBytes), mib(prunedBytes), peakRSS,
            cpuPerEvent, serverCPUPerEvent))
        print(String(
            format: "RESULT drain workload=%@ processes=%d batch=%d proofs=%@ balances=%@ rate=%.0f failed=%lld filled_mib=%@ drained_mib=%@ pruned_mib=%@ worker_rss_mib=%.0f worker_cpu_us_per_event=%.0f postgres_cpu_us_per_event=%@",
            workload.rawValue, processes, batchSize, proof.rawValue, balances.rawValue, rate, failed, mib(filledBytes), mib(drainedBytes), mib(prunedBytes), peakRSS,
            cpuPerEvent, serverCPUPerEvent))
        return Drain(rate: rate, cpuPerEvent: serverCPU.map { done > 0 ? (workerCPU + $0) * 1e6 / Double(done) : 0 })
    }

    /// Heap, indexes and TOAST of the events queue.
    static func eventsTableBytes(_ client: PostgresClient, logger: Logger) async throws -> Int64 {
        for try await bytes in try await client.query("SELECT pg_total_relation_size('events')", logger: logger).decode(Int64.self) {
            return bytes
        }
        return 0
    }

    /// Runs one `worker` operator command to its end, after waiting `delay`.
    private func runWorker(_ arguments: [String], url: DatabaseURL, after delay: Duration) async throws {
        try await Task.sleep(for: delay)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = url.urlString
        environment["LOG_LEVEL"] = "error"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("worker \(arguments.joined(separator: " ")) exited \(process.terminationStatus)") }
    }


    /// Stripe `customer.created` events, which Sluice records in its ledger and otherwise ignores.
    static func noopEvents(_ count: Int) throws -> [EventRecord] {
        let time = Date().addingTimeInterval(-3_600)
        return try (0..<count).map { index in
            let body = try SampleStripeEvents.event(
                id: "evt_noop_\(index)", type: "customer.created", created: time,
                object: ["id": "cus_noop_\(index)", "object": "customer"])
            return try StripeEventEnvelope.decode(ByteBuffer(data: body)).record(payload: ByteBuffer(data: body))
        }
    }

    private func startWorker(url: DatabaseURL, batchSize: Int, proof: Proofs) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: worker)
        process.arguments = ["run"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = url.urlString
        environment["WORKER_CONCURRENCY"] = "\(concurrency)"
        environment["WORKER_BATCH_SIZE"] = "\(batchSize)"
        environment["LOG_LEVEL"] = "error"
        environment["METRICS_PORT"] = "0"
        environment["EVENT_SIGNING_KEY"] = proof == .on ? Self.proofKey : nil
        process.environment = environment
        try process.run()
        return process
    }

    static func sqlDirectory() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }

    /// Half Stripe (a subscription's life: created, renewed, updated; and one-time payments),
    /// half Apple (SUBSCRIBED then renewals and renewal-status changes), in arrival order.
    static func mixedEvents(_ count: Int, signer: AppleJWSSigner) throws -> [EventRecord] {
        let start = Date().addingTimeInterval(-86_400)
        var records: [EventRecord] = []
        records.reserveCapacity(count)
        var index = 0
        while records.count < count {
            let entity = index / 5
            let step = index % 5
            let time = start.addingTimeInterval(Double(index))
            if index % 2 == 0 {
                let object: [String: Any]
                let type: String
                if entity % 3 == 0 {
                    type = "payment_intent.succeeded"
                    // Each buyer is their own Stripe customer (the sample's default, one `cus_1` for all,
                    // would make every payment of the backlog share one customer).
                    object = SampleStripeEvents.paymentIntent(id: "pi_\(entity)_\(step)", userID: "user_\(entity)", customer: "cus_pi_\(entity)")
                } else {
                    type = "customer.subscription.updated"
                    object = ["id": "sub_\(entity)", "object": "subscription", "status": step == 3 ? "past_due" : "active",
                              "customer": "cus_\(entity)", "cancel_at_period_end": step == 4,
                              "current_period_end": Int(time.timeIntervalSince1970) + 2_592_000,
                              "metadata": ["user_id": "user_\(entity)", "product_id": "pro.monthly"]]
                }
                let body = try SampleStripeEvents.event(id: "evt_\(index)", type: type, created: time, object: object)
                let envelope = try StripeEventEnvelope.decode(ByteBuffer(data: body))
                records.append(envelope.record(payload: ByteBuffer(data: body)))
            } else {
                let original = "\(3_000_000 + entity)"
                var transaction = SampleAppleTransaction(
                    transactionId: step == 0 ? original : "\(3_000_000 + entity)\(step)", originalTransactionId: original,
                    purchaseDate: time, signedDate: time, appAccountToken: UUID().uuidString.lowercased())
                transaction.signedDate = time.millisecondsSince1970
                let type = ["SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF"][step]
                let uuid = UUID().uuidString.lowercased()
                let body = try signer.notificationBody(
                    type: type, subtype: type == "DID_CHANGE_RENEWAL_STATUS" ? "AUTO_RENEW_DISABLED" : nil, uuid: uuid,
                    transaction: transaction, renewal: SampleAppleRenewalInfo(originalTransactionId: original, signedDate: time), signedDate: time)
                records.append(EventRecord(
                    source: .apple, externalID: uuid, type: type, environment: "Sandbox", eventTime: time, orderingKey: original,
                    payload: ByteBuffer(data: body)))
            }
            index += 1
        }
        return records
    }
}
