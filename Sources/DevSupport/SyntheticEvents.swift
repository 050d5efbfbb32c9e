// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
public import Shared

/// Queue rows with made-up content, for tests of the queue mechanism itself.
public enum SyntheticEvents {
    public static func record(_ index: Int, source: EventSource = .stripe, prefix: String = "evt") -> EventRecord {
        EventRecord(
            source: source, externalID: "\(prefix)_\(index)", type: "test.synthetic", environment: "test",
            eventTime: Date(), orderingKey: "obj_\(index % 97)",
            payload: ByteBuffer(string: #"{"id":"\#(prefix)_\#(index)","object":"event"}"#))
    }

    /// Stores `count` rows in batches; returns how many were new.
    @discardableResult
    public static func enqueue(_ count: Int, into store: EventStore, source: EventSource = .stripe, prefix: String = "evt") async throws -> Int {
        var stored = 0
        for start in stride(from: 0, to: count, by: 500) {
            let batch = (start..<min(start + 500, count)).map { record($0, source: source, prefix: prefix) }
            stored += try await store.insert(batch).filter { $0 == .stored }.count
        }
        return stored
    }
}
