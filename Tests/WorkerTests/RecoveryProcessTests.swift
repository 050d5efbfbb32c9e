// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import Shared
import Synchronization
import Testing
import TestSupport
import PostgresNIO

/// Recovery done by the built `worker`: `worker run` on its own within one interval, killed with
/// SIGKILL in the middle of a page, and `worker recover` / `worker reconcile` from the shell.
@Suite(.timeLimit(.minutes(4)))
struct RecoveryProcessTests {
    static func workerEnvironment(_ db: TestDatabase, _ extra: [String: String]) -> [String: String] {
        ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error", "WORKER_POLL_INTERVAL_MS": "100"].merging(extra) { $1 }
    }

    static func appleEnvironment(_ standIn: AppStoreServerAPIStandIn) throws -> [String: String] {
        try AppleRecoveryTests.environment(standIn)
    }

    /// Polls until `condition` holds or `seconds` pass.
    static func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return try await condition()
    }

    @Test func workerRunRecoversAndAppliesWithoutAnyCommand() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            let sent = try AppleRecoveryTests.add(5, to: standIn)
            try await TestDatabase.with { db in
                let worker = try await ServiceProcess(
                    "worker", arguments: ["run"],
                    environment: Self.workerEnvironment(db, try Self.appleEnvironment(standIn).merging(["RECOVERY_INTERVAL_SECONDS": "2"]) { $1 }))
                defer { worker.stop() }
                let applied = try await Self.eventually(30) {
                    try await db.scalar("SELECT count(*) FROM entitlements WHERE user_id = ANY(\(sent.map(\.user)))") == 5
                }
                #expect(applied, "\(worker.log(tail: 2_000))")
                #expect(try await db.scalar("SELECT count(*) FROM events WHERE origin = 'recovery' AND state = 'done'") == 5)
            }
        }
    }

    @Test func aWorkerKilledMidPageLeavesTheCheckpointAndTheNextOneStoresEverythingOnce() async throws {
        try await AppStoreServerAPIStandIn.with(bundleIDs: [TestCredentials.bundleID]) { standIn in
            _ = try AppleRecoveryTests.add(45, to: standIn, failedEvery: 1_000)
            let slow = Mutex(true)
            standIn.misbehave { _, request in
                slow.withLock { $0 } && request.paginationToken == "p20" ? .delay(.seconds(60)) : nil
            }
            try await TestDatabase.with { db in
                let environment = Self.workerEnvironment(db, try Self.appleEnvironment(standIn).merging(["RECOVERY_INTERVAL_SECONDS": "2"]) { $1 })
                let first = try await ServiceProcess("worker", arguments: ["run"], environment: environment)
                let midPage = try await Self.eventually(30) { standIn.requests.contains { $0.paginationToken == "p20" } }
                #expect(midPage)
                first.killHard()
                #expect(try await db.scalar("SELECT count(*) FROM events") == 20)
                #expect(try await db.strings(
                    "SELECT stream FROM recovery_checkpoints WHERE leased_by IS NOT NULL AND last_success_at IS NULL") == ["apple:sandbox:all"])

                slow.withLock { $0 = false }
                // The dead worker's lease runs out (two intervals, at least 30 s); then another takes the stream.
                let second = try await ServiceProcess("worker", arguments: ["run"], environment: environment)
                defer { second.stop() }
                let complete = try await Self.eventually(60) {
                    try await db.scalar("SELECT count(*) FROM recovery_checkpoints WHERE stream LIKE 'apple:%' AND last_success_at IS NOT NULL") == 4
                }
                #expect(complete, "\(second.log(tail: 2_000))")
                #expect(try await db.scalar("SELECT count(*) FROM events") == 45)
                #expect(try await db.scalar("SELECT count(*) - count(DISTINCT external_id) FROM events") == 0)
            }
        }
    }

    @Test func recoverAndReconcileFromTheShell() async throws {
        try await StripeAPIStandIn.with { standIn in
            for index in 0..<3 {
                standIn.add(event: StripeRecoveryTests.event(
                    "evt_cli_\(index)", "payment_intent.succeeded", StripeObjects.paymentIntent("pi_cli_\(index)", user: "u\(index)"),
                    created: Date().addingTimeInterval(-600)))
            }
            try await TestDatabase.with { db in
                let environment = Self.workerEnvironment(db, standIn.workerEnvironment())
                let dry = try await CommandLineTests.runSeparately("worker", ["recover", "--source", "stripe", "--since", "1h", "--dry-run"], environment: environment)
                #expect(dry.status == 0, "\(dry.stderr)")
                #expect(dry.stdout.contains("dry run: found 3, already stored 0, stored 3, rejected 0"))
                #expect(try await db.scalar("SELECT count(*) FROM events") == 0)

                let run = try await CommandLineTests.runSeparately("worker", ["recover", "--source", "stripe", "--since", "1h", "--json"], environment: environment)
                #expect(run.status == 0, "\(run.stderr)")
                let counts = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
                #expect(counts?["stored"] as? Int == 3)
                let again = try await CommandLineTests.runSeparately("worker", ["recover", "--source", "stripe", "--since", "1h"], environment: environment)
                #expect(again.stdout.contains("already stored 3, stored 0"))
                #expect(!again.stderr.contains(StripeAPIStandIn.apiKey) && !run.stdout.contains(StripeAPIStandIn.apiKey))

                // The stand-in's key is a test key: asked for production, the command says so instead of recovering test mode.
                let otherMode = try await CommandLineTests.runSeparately(
                    "worker", ["recover", "--source", "stripe", "--environment", "production"], environment: environment)
                #expect(otherMode.status == 1 && otherMode.stderr.contains("STRIPE_API_KEY is a sandbox key"), "\(otherMode.stderr)")

                let off = try await CommandLineTests.runSeparately("worker", ["recover", "--source", "apple"], environment: environment)
                #expect(off.status == 1)
                #expect(off.stderr.contains("Apple recovery is off"))
                let playOff = try await CommandLineTests.runSeparately("worker", ["recover", "--source", "google_play"], environment: environment)
                #expect(playOff.status == 1 && playOff.stderr.contains("Google Play recovery is off: set GOOGLE_PLAY_SERVICE_ACCOUNT_FILE"), "\(playOff.stderr)")

                let reconcile = try await CommandLineTests.runSeparately("worker", ["reconcile", "--all", "--dry-run"], environment: environment)
                #expect(reconcile.status == 0, "\(reconcile.stderr)")
                #expect(reconcile.stdout.contains("dry run: unchanged 0, corrected 0, skipped 0"))
                #expect(try await CommandLineTests.runSeparately("worker", ["reconcile"], environment: environment).status == 2)
            }
        }
    }
}
