// SPDX-License-Identifier: Apache-2.0
import Glibc
import Shared

/// A listening loopback socket that is never accepted from: whether anyone connected shows as a
/// pending connection in its backlog.
public final class LoopbackListener {
    let socket: Int32
    public let port: Int

    public init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 && listen(socket, 16) == 0
            }
        }
        guard ready else {
            close(socket)
            throw CommandFailure("cannot listen: errno \(errno)")
        }
        self.socket = socket
        port = Int(UInt16(bigEndian: address.sin_port))
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
    }

    /// Whether anyone connected since (the connection is taken and closed).
    public var hasPendingConnection: Bool {
        let connection = accept(socket, nil, nil)
        if connection >= 0 { close(connection) }
        return connection >= 0
    }

    deinit { close(socket) }
}
