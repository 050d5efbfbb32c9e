// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Shared
import Testing
import TestSupport
import NIOFoundationCompat

/// `worker stats`, `dlq …`, `pause`, `resume` and `prune`, run as the built binary against a real PostgreSQL.
@Suite(.timeLimit(.minutes(3)))
struct OperatorCommandTests {
    static let logger = TestDatabase.logger

    /// Runs `worker` with `arguments` against `db`.
    static func worker(_ db: TestDatabase, _ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await worker(db, arguments)
    }

    static func worker(_ db: TestDatabase, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await CommandLineTests.runSeparately("worker", arguments, environment: ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error"])
    }

    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    /// Stores an event and fails it once per error, the last failure leaving it dead; returns its `queue/id`.
    @discardableResult
    static func deadEvent(_ db: TestDatabase, source: EventSource, type: String, errors: [String] = ["boom"]) async throws -> String {
        let id = try await storeEvent(db, source: source, type: type)
        let queue = JobQueue(
            client: db.client, name: .events, configuration: .init(maxAttempts: errors.count, retry: .init(baseSeconds: 0, maxSeconds: 0)),
            logger: logger)
        for error in errors {
            let job = try #require(try await queue.dequeue(limit: 1, owner: "test").first)
            #expect(job.id == id)
            _ = try await queue.fail(job, error: error)
        }
        return "events/\(id)"
    }

    static func storeEvent(_ db: TestDatabase, source: EventSource, type: String, state: String? = nil) async throws -> Int64 {
        let external = UUID().uuidString
        _ = try await EventStore(client: db.client, logger: logger).insert([
            EventRecord(source: source, externalID: external, type: type, payload: ByteBuffer(string: #"{"id":"\#(external)"}"#))
        ])
        return try await db.scalar("SELECT id FROM events WHERE external_id = \(external)")
    }

    static func state(_ db: TestDatabase, _ item: String) async throws -> String {
        let id = Int64(item.split(separator: "/").last!)!
        for try await state in try await db.client.query("SELECT state FROM events WHERE id = \(id)", logger: logger).decode(String.self) {
            return state
        }
        return "missing"
    }

    @Test func statsAndListShowTheDeadLetters() async throws {
        try await TestDatabase.with { db async throws in
            let refund = try await Self.deadEvent(db, source: .stripe, type: "charge.refunded")
            try await Self.deadEvent(db, source: .apple, type: "DID_RENEW", errors: ["first", "second"])
            _ = try await Self.storeEvent(db, source: .stripe, type: "invoice.paid")

            let stats = try await Self.worker(db, "stats", "--json")
            #expect(stats.status == 0, "\(stats.stderr)")
            let report = try #require(try Self.json(stats.stdout) as? [String: Any])
            let events = try #require((report["queues"] as? [String: Any])?["events"] as? [String: Any])
            #expect(events["dead"] as? Int == 2)
            #expect(events["pending"] as? Int == 1)
            #expect(events["oldest_runnable_age_seconds"] is Double || events["oldest_runnable_age_seconds"] is Int)
            #expect((report["queues"] as? [String: Any])?["deliveries"] != nil)
            #expect(report["paused"] as? [String] == [])
            let text = try await Self.worker(db, "stats")
            #expect(text.status == 0)
            #expect(text.stdout.contains("QUEUE") && text.stdout.contains("charge.refunded"), "\(text.stdout)")

            let list = try await Self.worker(db, "dlq", "list", "--json")
            #expect(list.status == 0, "\(list.stderr)")
            let items = try #require(try Self.json(list.stdout) as? [[String: Any]])
            #expect(items.count == 2)
            #expect(Set(items.flatMap(\.keys)) == ["id", "queue", "source", "type", "external_id", "attempts", "last_error", "failed_at"])
            #expect(items.first { $0["type"] as? String == "DID_RENEW" }?["last_error"] as? String == "second")
            #expect(items.first { $0["type"] as? String == "DID_RENEW" }?["attempts"] as? Int == 2)

            for (filter, expected) in [
                (["--source", "stripe"], [refund]), (["--type", "charge.refunded"], [refund]), (["--since", "1h"], nil),
                (["--since", "2099-01-01T00:00:00Z"], []), (["--queue", "deliveries"], []),
            ] {
                let filtered = try await CommandLineTests.runSeparately(
                    "worker", ["dlq", "list", "--json"] + filter, environment: ["DATABASE_URL": db.url.urlString])
                let ids = try #require(try Self.json(filtered.stdout) as? [[String: Any]]).compactMap { $0["id"] as? String }
                #expect(ids.count == (expected?.count ?? 2), "\(filter): \(ids)")
                if let expected { #expect(ids == expected, "\(filter)") }
            }
            #expect(try await Self.worker(db, "dlq", "list").stdout.contains(refund))
        }
    }

    @Test func showPrintsEveryAttemptAndUnknownIdsFail() async throws {
        try await TestDatabase.with { db async throws in
            let item = try await Self.deadEvent(db, source: .stripe, type: "charge.refunded", errors: ["first failure", "second failure"])
            let show = try await Self.worker(db, "dlq", "show", item)
            #expect(show.status == 0, "\(show.stderr)")
            #expect(show.stdout.contains("first failure") && show.stdout.contains("second failure"), "\(show.stdout)")
            #expect(show.stdout.contains("charge.refunded"))
            let json = try #require(try Self.json(try await Self.worker(db, "dlq", "show", item, "--json").stdout) as? [String: Any])
            #expect((json["history"] as? [Any])?.count == 2)
            #expect(json["payload_base64"] is String)
            #expect(show.stdout.contains("failed at"))
            // Replayed and applied: a done job ended, it never failed.
            try await db.client.query("UPDATE events SET state = 'done', finished_at = now()", logger: Self.logger)
            let done = try await Self.worker(db, "dlq", "show", item).stdout
            #expect(done.contains("done at") && !done.contains("failed at"), "\(done)")

            for unknown in ["events/999999", "deliveries/5", "999999", "banana"] {
                let missing = try await Self.worker(db, "dlq", "show", unknown)
                #expect(missing.status == 1, "\(unknown): \(missing)")
                #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
                #expect(missing.stderr.contains(unknown.split(separator: "/").last!), "\(missing.stderr)")
            }
        }
    }

    @Test func replayIsIdempotentAndDryRunChangesNothing() async throws {
        try await TestDatabase.with { db async throws in
            let stripe = try await Self.deadEvent(db, source: .stripe, type: "charge.refunded", errors: ["a", "b"])
            let apple = try await Self.deadEvent(db, source: .apple, type: "DID_RENEW")

            let dry = try await Self.worker(db, "dlq", "replay", "--all", "--dry-run")
            #expect(dry.status == 0)
            #expect(dry.stdout.contains("would replay 2"), "\(dry.stdout)")
            #expect(try await Self.state(db, stripe) == "dead")

            let unknown = try await Self.worker(db, "dlq", "replay", "--id", stripe, "--id", "events/424242")
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("events/424242"), "\(unknown.stderr)")
            #expect(try await Self.state(db, stripe) == "dead", "an unknown id replays nothing")

            let replay = try await Self.worker(db, "dlq", "replay", "--id", stripe)
            #expect(replay.status == 0, "\(replay.stderr)")
            #expect(replay.stdout.contains("replayed 1"), "\(replay.stdout)")
            #expect(try await Self.state(db, stripe) == "pending")
            #expect(try await db.scalar("SELECT attempts FROM events WHERE state = 'pending'") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts") == 3, "the history stays")

            let again = try await Self.worker(db, "dlq", "replay", "--id", stripe)
            #expect(again.status == 0)
            #expect(again.stdout.contains("replayed 0") && again.stdout.contains("not dead"), "\(again.stdout)")

            let bySource = try await Self.worker(db, "dlq", "replay", "--all", "--source", "stripe")
            #expect(bySource.stdout.contains("replayed 0"), "\(bySource.stdout)")
            #expect(try await Self.state(db, apple) == "dead")
            let all = try await Self.worker(db, "dlq", "replay", "--all", "--source", "apple", "--type", "DID_RENEW")
            #expect(all.stdout.contains("replayed 1"), "\(all.stdout)")
            #expect(try await Self.state(db, apple) == "pending")
        }
    }

    @Test func discardMarksOnlyDeadItemsAndUnknownIdsDiscardNothing() async throws {
        try await TestDatabase.with { db async throws in
            let first = try await Self.deadEvent(db, source: .stripe, type: "charge.refunded")
            let second = try await Self.deadEvent(db, source: .apple, type: "DID_RENEW")
            let unknown = try await Self.worker(db, "dlq", "discard", "--id", first, "--id", "events/424242")
            #expect(unknown.status == 1 && unknown.stderr.contains("events/424242"), "\(unknown.stderr)")
            #expect(try await Self.state(db, first) == "dead")
            let discard = try await Self.worker(db, "dlq", "discard", "--id", first)
            #expect(discard.status == 0 && discard.stdout.contains("discarded 1"), "\(discard)")
            #expect(try await Self.state(db, first) == "discarded")
            #expect(try await Self.state(db, second) == "dead")
            let again = try await Self.worker(db, "dlq", "discard", "--id", first)
            #expect(again.stdout.contains("not dead") && again.stdout.contains("discarded 0"), "\(again.stdout)")
            #expect(try await Self.worker(db, "dlq", "discard").status == 2)
        }
    }

    @Test func drainWritesNDJSONThenDiscards() async throws {
        try await TestDatabase.with { db async throws in
            let first = try await Self.deadEvent(db, source: .stripe, type: "charge.refunded")
            let second = try await Self.deadEvent(db, source: .storekit, type: "STOREKIT_SYNC", errors: ["x", "y"])
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("drain-\(UUID().uuidString).ndjson")
            defer { try? FileManager.default.removeItem(at: file) }

            let drain = try await Self.worker(db, "dlq", "drain", "--output", file.path)
            #expect(drain.status == 0, "\(drain.stderr)")
            #expect(drain.stderr.contains("drained 2"), "\(drain.stderr)")
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 2)
            let objects = try lines.map { try #require(try Self.json(String($0)) as? [String: Any]) }
            #expect(Set(objects.compactMap { $0["id"] as? String }) == [first, second])
            for object in objects {
                let encoded = try #require(object["payload_base64"] as? String)
                let bytes = try #require(Data(base64Encoded: encoded))
                #expect(String(decoding: bytes, as: UTF8.self) == object["payload"] as? String)
            }
            #expect(objects.first { $0["id"] as? String == second }.flatMap { $0["history"] as? [Any] }?.count == 2)
            #expect(try await Self.state(db, first) == "discarded")
            #expect(try await Self.state(db, second) == "discarded")

            let empty = try await Self.worker(db, "dlq", "drain")
            #expect(empty.status == 0)
            #expect(empty.stdout.isEmpty && empty.stderr.contains("drained 0"))
            #expect(try await db.scalar("SELECT count(*) FROM events") == 2, "discarded rows are kept")
        }
    }

    @Test func pauseStopsARunningWorkerAndResumeRestartsIt() async throws {
        try await TestDatabase.with { db async throws in
            let worker = Process()
            worker.executableURL = CommandLineTests.binaries.appendingPathComponent("worker")
            worker.arguments = ["run"]
            worker.environment = ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error", "METRICS_PORT": "0", "PATH": "/usr/bin:/bin"]
            try worker.run()
            defer { worker.terminate(); worker.waitUntilExit() }

            let paused = try await Self.worker(db, "pause", "--queue", "events")
            #expect(paused.status == 0 && paused.stdout.contains("paused events"), "\(paused)")
            #expect(try await Self.worker(db, "stats", "--json").stdout.contains(#""paused":["events"]"#))
            // A second after the pause, no worker takes anything.
            try await Task.sleep(for: .seconds(1))
            for index in 0..<5 {
                let body = try SampleStripeEvents.event(id: "evt_pause_\(index)", type: "customer.created", created: Date(), object: ["id": "cus_\(index)"])
                _ = try await EventStore(client: db.client, logger: Self.logger).insert([
                    EventRecord(source: .stripe, externalID: "evt_pause_\(index)", type: "customer.created", payload: ByteBuffer(data: body))
                ])
            }
            try await Task.sleep(for: .seconds(2))
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE attempts > 0") == 0)

            let resumed = try await Self.worker(db, "resume")
            #expect(resumed.status == 0 && resumed.stdout.contains("resumed events, deliveries"), "\(resumed)")
            let deadline = ContinuousClock.now + .seconds(20)
            while try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") < 5, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await db.scalar("SELECT count(*) FROM events WHERE state = 'done'") == 5)
        }
    }

    @Test func pruneDeletesOnlyOldDoneRows() async throws {
        try await TestDatabase.with { db async throws in
            let dead = try await Self.deadEvent(db, source: .stripe, type: "c")
            let old = try await Self.storeEvent(db, source: .stripe, type: "a")
            let recent = try await Self.storeEvent(db, source: .stripe, type: "b")
            let pending = try await Self.storeEvent(db, source: .stripe, type: "d")
            try await db.client.query(
                """
                UPDATE events SET state = 'done', finished_at = now() - CASE WHEN id = \(old) THEN interval '40 days' ELSE interval '1 hour' END
                WHERE id IN (\(old), \(recent))
                """, logger: Self.logger)
            try await db.client.query(
                "UPDATE events SET finished_at = now() - interval '90 days' WHERE state = 'dead'", logger: Self.logger)
            try await db.client.query(
                "INSERT INTO queue_attempts (queue, job_id, attempt, error) VALUES ('events', \(old), 1, 'old')", logger: Self.logger)

            let prune = try await Self.worker(db, "prune", "--older-than", "30d", "--batch-size", "1")
            #expect(prune.status == 0, "\(prune.stderr)")
            #expect(prune.stdout.contains("pruned 1 done events"), "\(prune.stdout)")
            var remaining: [Int64] = []
            for try await id in try await db.client.query("SELECT id FROM events ORDER BY id", logger: Self.logger).decode(Int64.self) {
                remaining.append(id)
            }
            #expect(remaining == [Int64(dead.split(separator: "/").last!)!, recent, pending])
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts WHERE job_id = \(old)") == 0)
            #expect(try await db.scalar("SELECT count(*) FROM queue_attempts") == 1, "the dead row's history stays")
        }
    }
}
