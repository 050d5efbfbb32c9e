// SPDX-License-Identifier: Apache-2.0
public import NIOCore

/// How long every listener of Sluice (ingest's API and admin ports, the worker's metrics port,
/// the console) keeps a connection open without a request: an idle connection left open
/// indefinitely costs a file descriptor, and enough of them, held by anyone who can connect,
/// refuse everyone else.
public enum IdleConnections {
    public static let timeout: TimeAmount = .seconds(30)
}
