// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Glibc
import Shared

/// A plain TCP connection to a loopback port that writes exactly the bytes it is given, so tests
/// can send what no HTTP client would: garbage, header floods, invalid UTF-8, bodies that trickle.
///
/// Socket calls block, so every call runs on a Dispatch thread, never on the concurrency pool.
public final class RawHTTPConnection: Sendable {
    /// What came back: a parsed response, or nothing because the server closed the connection.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
    }

    private let socket: Int32

    /// Connects, with `timeout` for every read.
    public init(port: Int, timeout: Duration = .seconds(15)) async throws {
        socket = try await Self.blocking {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in.loopback(port: UInt16(port))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(socket)
                throw CommandFailure("cannot connect to port \(port): errno \(errno)")
            }
            var interval = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            return socket
        }
    }

    deinit { close(socket) }

    /// Writes all of `bytes`; `false` when the server has closed the connection (it may already have answered).
    @discardableResult
    public func send(_ bytes: [UInt8]) async -> Bool {
        await (try? Self.blocking { [socket] in
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }) ?? false
    }

    public func send(_ text: String) async -> Bool { await send(Array(text.utf8)) }

    /// Reads one response (head, then a `Content-Length` body); `nil` when the connection closed
    /// or the read timed out before a whole head arrived.
    public func readResponse() async -> Response? {
        try? await Self.blocking { [socket] in
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            func fill() -> Bool {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return false }
                received.append(contentsOf: buffer[..<count])
                return true
            }
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            var headEnd: Int?
            while headEnd == nil {
                guard fill() else { return nil }
                headEnd = received.indices.dropLast(3).first { received[$0..<($0 + 4)].elementsEqual(separator) }
            }
            let head = String(decoding: received[..<headEnd!], as: UTF8.self).components(separatedBy: "\r\n")
            guard let status = head.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let bodyStart = headEnd! + 4
            let length = headers["content-length"].flatMap(Int.init) ?? 0
            while received.count - bodyStart < length, fill() {}
            let body = String(decoding: received[bodyStart..<min(received.count, bodyStart + length)], as: UTF8.self)
            return Response(status: status, headers: headers, body: body)
        }
    }

    /// Whether the server has closed the connection: a read returns end-of-file within `timeout`'s read limit.
    public func isClosedByServer() async -> Bool {
        (try? await Self.blocking { [socket] in
            var byte: UInt8 = 0
            return recv(socket, &byte, 1, 0) == 0
        }) ?? false
    }

    /// Sends `request` on a new connection and reads the response.
    public static func exchange(port: Int, _ request: [UInt8], timeout: Duration = .seconds(15)) async throws -> Response? {
        let connection = try await RawHTTPConnection(port: port, timeout: timeout)
        await connection.send(request)
        return await connection.readResponse()
    }

    private static func blocking<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Swift.Result { try work() }) }
        }
    }
}

/// Builds raw HTTP/1.1 requests.
public enum RawRequest {
    /// A request with `Content-Length`; `headers` are written as given, so they may hold any bytes.
    public static func post(_ path: String, headers: [(String, [UInt8])] = [], body: [UInt8]) -> [UInt8] {
        var bytes = Array("POST \(path) HTTP/1.1\r\nHost: sluice\r\nContent-Length: \(body.count)\r\n".utf8)
        for (name, value) in headers { bytes += Array("\(name): ".utf8) + value + Array("\r\n".utf8) }
        return bytes + Array("\r\n".utf8) + body
    }

    public static func post(_ path: String, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
        post(path, headers: headers.map { ($0.0, Array($0.1.utf8)) }, body: body)
    }
}
