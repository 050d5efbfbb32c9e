// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// `pg_free_port` (scripts/postgres.sh), which gives every port the scripts start something on:
/// it remembers the ports it gave for ten minutes, so that two ports picked before anything
/// listens on either are never the same (chaos' worker once got ingest's metrics port).
@Suite(.timeLimit(.minutes(2)))
struct FreePortTests {
    struct Run {
        var status: Int32
        var ports: [Int]
        var errors: String
    }

    /// `pg_free_port`, `times` times in one shell, with `PG_PORTS_GIVEN=ledger`.
    static func freePorts(_ times: Int, ledger: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "source scripts/postgres.sh && for _ in $(seq \(times)); do pg_free_port || exit 1; done"]
        process.currentDirectoryURL = DeployFiles.repository
        // The caller's PATH: pg_free_port needs python3, which need not be in /usr/bin.
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "PG_PORTS_GIVEN": ledger]
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        try process.run()
        return process
    }

    static func finish(_ process: Process) -> Run {
        let output = (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        let errors = (process.standardError as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, ports: String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { Int($0) },
            errors: String(decoding: errors, as: UTF8.self))
    }

    static func temporaryLedger() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-ports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("given")
    }

    /// The range it picks from: the 12,000 ports below the kernel's ephemeral range.
    static func range() throws -> ClosedRange<Int> {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let low = try #require(text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) })
        try #require(low > 2_048, "an ephemeral range from \(low) leaves no room below it")
        return max(1024, low - 12_000)...(low - 1)
    }

    /// Two shells picking at once never get one port twice: the ledger is read and written under a lock.
    @Test func twoShellsAtOnceGetDifferentPorts() throws {
        let ledger = try Self.temporaryLedger()
        defer { try? FileManager.default.removeItem(at: ledger.deletingLastPathComponent()) }
        let shells = try [Self.freePorts(25, ledger: ledger.path), Self.freePorts(25, ledger: ledger.path)]
        let runs = shells.map(Self.finish)
        #expect(runs.allSatisfy { $0.status == 0 && $0.ports.count == 25 }, "\(runs.map(\.errors))")
        let ports = runs.flatMap(\.ports)
        #expect(Set(ports).count == 50, "a port given twice: \(ports.sorted())")
        let remembered = try String(contentsOf: ledger, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").first.flatMap { Int($0) } }
        #expect(Set(remembered) == Set(ports))
    }

    /// A port given in the last ten minutes is not given again, even when half the range is taken:
    /// thirty picks that each avoided half the range by chance would be one in a billion.
    @Test func aRememberedPortIsNotGivenAgain() throws {
        let ledger = try Self.temporaryLedger()
        defer { try? FileManager.default.removeItem(at: ledger.deletingLastPathComponent()) }
        let range = try Self.range()
        let now = Date().timeIntervalSince1970
        let taken = Set(range.filter { $0.isMultiple(of: 2) })
        try taken.map { "\($0) \(now - 60)\n" }.joined().write(to: ledger, atomically: true, encoding: .utf8)
        let run = Self.finish(try Self.freePorts(30, ledger: ledger.path))
        #expect(run.status == 0 && run.ports.count == 30, "\(run.errors)")
        #expect(run.ports.allSatisfy { range.contains($0) && !taken.contains($0) }, "\(run.ports.filter(taken.contains))")
    }

    /// What was given more than ten minutes ago is forgotten; a time ahead of the clock (one set
    /// back) is kept; a line cut short is dropped.
    @Test func oldPortsAreForgotten() throws {
        let ledger = try Self.temporaryLedger()
        defer { try? FileManager.default.removeItem(at: ledger.deletingLastPathComponent()) }
        let now = Date().timeIntervalSince1970
        try "2001 \(now - 11 * 60)\n2002 \(now - 60)\n2003 \(now + 120)\n2004\n".write(to: ledger, atomically: true, encoding: .utf8)
        let run = Self.finish(try Self.freePorts(1, ledger: ledger.path))
        #expect(run.status == 0 && run.ports.count == 1, "\(run.errors)")
        let remembered = Set(try String(contentsOf: ledger, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").first.flatMap { Int($0) } })
        #expect(remembered == Set([2002, 2003] + run.ports))
    }

    /// A ledger that cannot be written: a port all the same, and one line saying so.
    @Test func anUnwritableLedgerStillGivesAPort() throws {
        let run = Self.finish(try Self.freePorts(1, ledger: "/nonexistent/sluice-ports-given"))
        #expect(run.status == 0 && run.ports.count == 1)
        #expect(run.errors.split(separator: "\n").count == 1 && run.errors.contains("ports not remembered"), "\(run.errors)")
    }
}
