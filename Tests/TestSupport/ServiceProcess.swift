// SPDX-License-Identifier: Apache-2.0
public import Foundation
import Glibc
import Shared

/// A built `ingest` or `worker` running as its own process, as in production: its standard output
/// and error go to a log file the test can read, and its peak memory is read from `/proc`.
public final class ServiceProcess: Sendable {
    public let port: Int
    public let logFile: URL
    private let process: Process

    /// Starts `binary` with `environment` (plus `INGEST_PORT`/`METRICS_PORT` set to a free port
    /// unless given) and waits until `GET /healthz` answers on that port.
    public init(_ binary: String, arguments: [String] = [], environment: [String: String]) async throws {
        let port = try Self.freePort()
        var environment = environment
        environment[binary == "ingest" ? "INGEST_PORT" : "METRICS_PORT", default: "\(port)"] = "\(port)"
        environment["INGEST_HOST"] = environment["INGEST_HOST"] ?? "127.0.0.1"
        environment["PATH"] = "/usr/bin:/bin"
        Self.setLoadedMachineDefaults(&environment)
        self.port = port
        self.logFile = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(binary)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: logFile)
        process = Process()
        process.executableURL = BuiltProducts.path(binary)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let response = try? await RawHTTPConnection.exchange(port: port, Array("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n".utf8)),
               response.status == 200 {
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        stop()
        throw CommandFailure("\(binary) did not become healthy on port \(port): \(log(tail: 2_000))")
    }

    public var isRunning: Bool { process.isRunning }

    /// `DATABASE_TIMEOUT_SECONDS` of 30 unless the test gives its own, as the in-process harnesses
    /// set (`TestCredentials.ingestEnvironment`, `TestDatabase.serverURL()`): with a hundred suites
    /// started at once on two cores, a first query on a fresh database was seen to take more than
    /// the product's 5 s. The tests of the timeout itself give theirs.
    static func setLoadedMachineDefaults(_ environment: inout [String: String]) {
        if environment["DATABASE_TIMEOUT_SECONDS"] == nil { environment["DATABASE_TIMEOUT_SECONDS"] = "30" }
    }

    /// What a process that was expected to stop by itself did.
    public struct Exit: Sendable {
        public var status: Int32
        /// Its standard output and error together.
        public var output: String
        public var elapsed: Duration
        /// Whether it was still running at the limit (then killed, and `status` is meaningless).
        public var timedOut: Bool
    }

    /// Runs `binary` to its exit, killing it past `limit`.
    public static func runToExit(
        _ binary: String, arguments: [String] = [], environment: [String: String], limit: Duration = .seconds(20)
    ) async throws -> Exit {
        var environment = environment
        environment["PATH"] = "/usr/bin:/bin"
        setLoadedMachineDefaults(&environment)
        let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(binary)-exit-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: logFile) }
        let output = try FileHandle(forWritingTo: logFile)
        let process = Process()
        process.executableURL = BuiltProducts.path(binary)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        let started = ContinuousClock.now
        try process.run()
        var timedOut = false
        while process.isRunning {
            if ContinuousClock.now - started > limit {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - started
        return Exit(
            status: process.terminationStatus, output: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "", elapsed: elapsed,
            timedOut: timedOut)
    }

    /// The most memory the process has held (`VmHWM`), in bytes.
    public var peakResidentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// Everything the process logged so far (its last `tail` characters, when given).
    public func log(tail: Int? = nil) -> String {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return tail.map { String(text.suffix($0)) } ?? text
    }

    /// How long ``stop()`` waits for a graceful exit before it kills the process: beyond the
    /// worker's documented shutdown deadline, max(LEASE_SECONDS, 30) + 10 s (70 s at the default
    /// LEASE_SECONDS of 60).
    public static let stopLimit: Duration = .seconds(80)

    /// SIGTERM, then waits for the exit, at most ``stopLimit``: a process that does not stop by
    /// then is killed (SIGKILL) and said so on standard error, so a shutdown that hangs cannot
    /// hang the suite (a test of shutdown checks the answer). The log file stays for the test to read.
    ///
    /// - Returns: whether the process exited on its own (`false`: it was killed, or was not running).
    @discardableResult
    public func stop() -> Bool {
        guard process.isRunning else { return false }
        kill(process.processIdentifier, SIGTERM)
        let started = ContinuousClock.now
        while process.isRunning, ContinuousClock.now - started < Self.stopLimit { usleep(20_000) }
        guard process.isRunning else {
            process.waitUntilExit()
            return true
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        FileHandle.standardError.write(Data(
            "\(process.executableURL?.lastPathComponent ?? "a process") did not stop within \(Self.stopLimit) of SIGTERM: killed\n".utf8))
        return false
    }

    /// SIGKILL: no graceful shutdown, nothing finished or released; waits for the exit.
    public func killHard() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: logFile)
    }

    /// A loopback port nothing listens on right now.
    public static func freePort() throws -> Int {
        try LoopbackListener().port
    }
}

extension sockaddr_in {
    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
