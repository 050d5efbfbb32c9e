// SPDX-License-Identifier: Apache-2.0
import Foundation
import Shared
import Testing
import TestSupport
import PostgresNIO

/// The built `worker` and `ingest` binaries: help, usage errors and failures with the contract's exit codes.
struct CommandLineTests {
    static let binaries = BuiltProducts.directory

    /// Runs a built binary to its end: its exit status and everything it printed (standard output, then standard error).
    static func run(_ binary: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let result = try await runSeparately(binary, arguments, environment: environment)
        return (result.status, result.stdout + result.stderr)
    }

    /// Runs a built binary to its end, keeping standard output (what scripts read) apart from
    /// standard error. Both go to files and the end is awaited, not waited for: no thread of the
    /// cooperative pool is held while the child runs, so a stand-in it calls that this process
    /// serves (Stripe's, Apple's, Google's) is answered even on two cores.
    static func runSeparately(
        _ binary: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = binaries.appendingPathComponent(binary)
        process.arguments = arguments
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        let directory = FileManager.default.temporaryDirectory
        let files = ["stdout", "stderr"].map { directory.appendingPathComponent("sluice-\($0)-\(UUID().uuidString)") }
        for file in files { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        defer { for file in files { try? FileManager.default.removeItem(at: file) } }
        let handles = try files.map { try FileHandle(forWritingTo: $0) }
        defer { for handle in handles { try? handle.close() } }
        process.standardOutput = handles[0]
        process.standardError = handles[1]
        try await withCheckedThrowingContinuation { (ended: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in ended.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                ended.resume(throwing: error)
            }
        }
        let printed = files.map { (try? String(contentsOf: $0, encoding: .utf8)) ?? "" }
        return (process.terminationStatus, printed[0], printed[1])
    }

    /// Every script answers `--help` with its usage and exits 0, doing nothing else (scripts/lib/help.sh).
    @Test func everyScriptAnswersHelp() throws {
        let scripts = Vectors.repository.appendingPathComponent("scripts")
        // scripts/worker hands --help to the worker binary; postgres.sh is a library.
        let names = try FileManager.default.contentsOfDirectory(atPath: scripts.path).filter { !["worker", "postgres.sh", "lib"].contains($0) }
        #expect(names.count >= 20)
        for name in names.sorted() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [scripts.appendingPathComponent(name).path, "--help"]
            process.environment = ["PATH": "/usr/bin:/bin"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0 && text.split(separator: "\n").count >= 2, "scripts/\(name) --help: \(text)")
        }
    }

    @Test(arguments: [
        ("worker", ["--help"]), ("worker", ["run", "--help"]), ("worker", ["migrate", "--help"]), ("ingest", ["--help"]),
        ("worker", ["stats", "--help"]), ("worker", ["dlq", "--help"]), ("worker", ["dlq", "list", "--help"]),
        ("worker", ["dlq", "show", "--help"]), ("worker", ["dlq", "replay", "--help"]), ("worker", ["dlq", "drain", "--help"]),
        ("worker", ["pause", "--help"]), ("worker", ["resume", "--help"]), ("worker", ["prune", "--help"]),
        ("worker", ["recover", "--help"]), ("worker", ["reconcile", "--help"]), ("worker", ["rebuild", "--help"]),
    ])
    func helpExplainsAndExitsZero(binary: String, arguments: [String]) async throws {
        let (status, output) = try await Self.run(binary, arguments)
        #expect(status == 0, "\(output)")
        #expect(output.contains("USAGE"), "\(output)")
        if !["--help", "dlq"].contains(arguments[0]) || binary == "ingest" { #expect(output.contains("DATABASE_URL"), "\(output)") }
    }

    @Test(arguments: [
        ["no-such-command"], ["migrate", "--no-such-flag"], ["run", "extra"], ["dlq", "replay"], ["dlq", "replay", "--id", "events/1", "--all"],
        ["dlq", "replay", "--id", "events/1", "--source", "stripe"], ["dlq", "list", "--since", "yesterday"],
        ["dlq", "list", "--source", "paypal"], ["dlq", "list", "--limit", "0"], ["pause", "--queue", "nope"], ["prune"],
        ["prune", "--older-than", "5x"], ["dlq", "show"], ["recover", "--source", "google_play", "--environment", "sandbox"],
    ])
    func badUsageExitsTwo(arguments: [String]) async throws {
        let (status, output) = try await Self.run("worker", arguments)
        #expect(status == 2, "\(output)")
    }

    @Test func anUnreachableDatabaseIsOneLineAndExitOne() async throws {
        let (status, output) = try await Self.run("worker", ["migrate", "--directory", "sql"], environment: ["DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"])
        #expect(status == 1)
        #expect(output.contains("cannot be reached"))
        #expect(output.split(separator: "\n").count == 1, "\(output)")
    }

    @Test(arguments: [
        ["FORWARD_TARGETS": "ftp://hooks.example.com/x"], ["FORWARD_SECRET": "not-a-whsec-secret"], ["WORKER_LISTEN": "maybe"],
        ["WORKER_POLL_INTERVAL_MS": "5"],
    ])
    func aBadForwardSettingStopsTheWorkerWithOneLineNamingIt(setting: [String: String]) async throws {
        let (status, output) = try await Self.run("worker", ["run"], environment: setting.merging(["DATABASE_URL": "postgres://x@127.0.0.1:1/x"]) { $1 })
        #expect(status == 1)
        #expect(output.contains(setting.keys.first!), "\(output)")
        #expect(!output.contains(setting.values.first!), "the value is never echoed: \(output)")
        #expect(output.split(separator: "\n").count == 1, "\(output)")
    }

    /// Migrating needs only DATABASE_URL: a setting of the pool's that is wrong does not stop it.
    @Test func migrateIgnoresThePoolsSettings() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let (status, output) = try await Self.run(
                "worker", ["migrate", "--directory", TestDatabase.migrationsDirectory.path],
                environment: ["DATABASE_URL": db.url.urlString, "FORWARD_TARGETS": "ftp://x", "WORKER_CONCURRENCY": "0"])
            #expect(status == 0, "\(output)")
            #expect(output.contains("applied"), "\(output)")
        }
    }

    @Test func aBadSettingStopsIngestWithOneLineNamingIt() async throws {
        let (status, output) = try await Self.run("ingest", [], environment: ["DATABASE_URL": "postgres://x@127.0.0.1:1/x", "INGEST_PORT": "99999"])
        #expect(status == 1)
        #expect(output.contains("INGEST_PORT"))
    }

    /// Four `worker migrate` processes at once: each migration is applied once, all four exit 0.
    @Test func fourMigrateProcessesAtOnceApplyEachMigrationOnce() async throws {
        try await TestDatabase.with(migrate: false) { db async throws in
            let environment = ["DATABASE_URL": db.url.urlString, "LOG_LEVEL": "error"]
            let results = try await withThrowingTaskGroup(of: (Int32, String).self) { group in
                for _ in 0..<4 {
                    group.addTask { try await Self.run("worker", ["migrate", "--directory", TestDatabase.migrationsDirectory.path], environment: environment) }
                }
                return try await group.reduce(into: [(Int32, String)]()) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.0 == 0 }, "\(results)")
            let versions = try Migration.load(from: TestDatabase.migrationsDirectory).map(\.version)
            // Exactly one process applied the migrations; the others found them done.
            #expect(results.filter { $0.1.contains("applied \(versions.joined(separator: ", "))") }.count == 1, "\(results)")
            #expect(results.filter { $0.1.contains("up to date") }.count == 3, "\(results)")
            #expect(try await db.scalar("SELECT count(*) FROM schema_migrations") == Int64(versions.count))
        }
    }
}
