// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import Logging
import NIOCore
import Shared

/// The receiver's one job for every provider: read the raw body, verify it, store it, answer.
///
/// A `2xx` is returned only after the row is committed; a database that cannot be reached is a
/// `503`, never a `2xx`. Verification failures are counted by reason and answered `4xx`.
struct EventReceiver: Sendable {
    let writer: GroupCommitWriter
    let metrics: IngestMetrics
    let maxBodyBytes: Int
    /// How long a request's body may take to arrive (`REQUEST_TIMEOUT_SECONDS`).
    let bodyTimeout: Duration
    /// How long a request waits for its commit before it is answered `503` (the provider retries).
    let storeTimeout: Duration

    /// Reads the body, up to `MAX_BODY_BYTES`, within `REQUEST_TIMEOUT_SECONDS`.
    ///
    /// - Throws: ``Rejection`` `unsupported_media_type` for a `Content-Type` that is not JSON,
    ///   `too_large` (also when `Content-Length` announces too much), or ``APIError`` `408` with
    ///   `Connection: close` when the body trickles in too slowly (slow-loris).
    func readBody(_ request: Request, source: EventSource) async throws -> ByteBuffer {
        do {
            if let contentType = request.headers[.contentType], !Self.isJSON(contentType) {
                throw Rejection(.unsupportedMediaType, "Content-Type must be application/json")
            }
            if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
                throw tooLarge
            }
            let body = request.body
            let limit = maxBodyBytes
            return try await withCancellingTimeout(bodyTimeout) { try await body.collect(upTo: limit) }
        } catch is NIOTooManyBytesError {
            metrics.countRejection(source: source, reason: .tooLarge)
            throw tooLarge
        } catch let rejection as Rejection {
            metrics.countRejection(source: source, reason: rejection.reason)
            throw rejection
        } catch is TimeoutError {
            metrics.countRejection(source: source, reason: .requestTimeout)
            throw APIError(
                Rejection(.requestTimeout, "the body did not arrive within REQUEST_TIMEOUT_SECONDS"), headers: [.connection: "close"])
        }
    }

    private var tooLarge: Rejection {
        Rejection(.tooLarge, "the body is larger than MAX_BODY_BYTES (\(maxBodyBytes) bytes)")
    }

    /// `application/json` in any case, with or without parameters such as `; charset=utf-8` and
    /// HTTP's optional whitespace around it. Compares bytes: it runs on every webhook request.
    static func isJSON(_ contentType: String) -> Bool {
        var mediaType = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = mediaType.first, isSpace(first) { mediaType.removeFirst() }
        while let last = mediaType.last, isSpace(last) { mediaType.removeLast() }
        // ASCII letters differ from their capitals only in bit 0x20; "/" is compared as it is.
        return mediaType.count == jsonMediaType.count
            && zip(mediaType, jsonMediaType).allSatisfy { $0 == $1 || ($1 != UInt8(ascii: "/") && $0 | 0x20 == $1) }
    }

    private static let jsonMediaType = Array("application/json".utf8)

    /// Runs a verification and counts its rejection, if any, by reason.
    func verify<Result>(source: EventSource, logger: Logger, _ body: () async throws(Rejection) -> Result) async throws(Rejection) -> Result {
        do {
            return try await body()
        } catch {
            metrics.countRejection(source: source, reason: error.reason)
            logger.info("rejected", metadata: ["source": "\(source)", "reason": "\(error.reason)", "detail": "\(error.message)"])
            throw error
        }
    }

    /// Stores a verified event and waits for its commit.
    ///
    /// - Throws: ``APIError`` `503` when it could not be committed in time.
    func store(_ record: EventRecord, logger: Logger) async throws -> StoreResult {
        let started = ContinuousClock.now
        let result: StoreResult
        do {
            result = try await writer.store(record, timeout: storeTimeout)
        } catch {
            metrics.countStoreFailure(source: record.source)
            logger.error("event not stored", metadata: [
                "source": "\(record.source)", "external_id": "\(record.externalID)", "error": "\(String(reflecting: error))",
            ])
            throw APIError.unavailable("the event could not be stored; retry later")
        }
        metrics.recordStoreDuration(started.duration(to: .now))
        metrics.countEvent(source: record.source, result: result)
        logger.info(result == .stored ? "stored" : "duplicate", metadata: [
            "source": "\(record.source)", "external_id": "\(record.externalID)", "type": "\(record.type)",
        ])
        return result
    }
}
