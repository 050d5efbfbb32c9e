// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
public import CryptoExtras
public import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// Google's OIDC signing keys, the JSON Web Key Set Google publishes
/// (`https://www.googleapis.com/oauth2/v3/certs`), kept for its `Cache-Control: max-age` and
/// fetched by one caller at a time (``StateMachine``); this shell runs the fetch and wakes the
/// callers that waited for it.
public final class GoogleSigningKeys: Sendable {
    public typealias Key = _RSA.Signing.PublicKey
    /// Fetches the set: the RSA keys by `kid`, and the `max-age` it may be kept.
    public typealias Fetch = @Sendable () async throws -> (keys: [String: Key], maxAge: TimeInterval?)

    private struct State {
        var machine = StateMachine<Key>()
        var nextWaiter = 0
        var waiting: [StateMachine<Key>.WaiterID: CheckedContinuation<Void, Never>] = [:]
        /// Waiters woken before they stored their continuation.
        var early: Set<StateMachine<Key>.WaiterID> = []
    }

    private let state = Mutex(State())
    private let fetch: Fetch

    public init(fetch: @escaping Fetch) {
        self.fetch = fetch
    }

    /// The set at `url`, fetched within ten seconds.
    public convenience init(url: String) {
        self.init { try await Self.download(url, http: .shared, timeout: .seconds(10)) }
    }

    /// The key `kid` names.
    ///
    /// - Throws: ``Rejection`` `unknown_key` when Google publishes no such key, `keys_unavailable`
    ///   when no set could ever be fetched.
    public func key(_ kid: String, now: @Sendable () -> Date = Date.init) async throws(Rejection) -> Key {
        let (action, waiter) = state.withLock { state in
            state.nextWaiter += 1
            return (state.machine.begin(kid, waiter: state.nextWaiter, now: now()), state.nextWaiter)
        }
        switch action {
        case .use(let key):
            return key
        case .refuse(let rejection):
            throw rejection
        case .wait:
            await wait(as: waiter)
        case .fetch:
            let fetched = try? await fetch()
            let woken = state.withLock { state in
                state.machine.finish(fetched.map { .init(keys: $0.keys, maxAge: $0.maxAge) }, now: now()).compactMap { id in
                    if let continuation = state.waiting.removeValue(forKey: id) { return continuation }
                    state.early.insert(id)
                    return nil
                }
            }
            for continuation in woken { continuation.resume() }
        }
        switch state.withLock({ $0.machine.resolve(kid) }) {
        case .use(let key): return key
        case .refuse(let rejection): throw rejection
        case .fetch, .wait: throw Rejection(.keysUnavailable, "Google's signing keys could not be fetched")
        }
    }

    private func wait(as waiter: StateMachine<Key>.WaiterID) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let woken = state.withLock { state in
                    guard state.early.remove(waiter) == nil else { return true }
                    state.waiting[waiter] = continuation
                    return false
                }
                if woken { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard state.machine.cancel(waiter) else { return nil }
                guard let continuation = state.waiting.removeValue(forKey: waiter) else {
                    state.early.insert(waiter)
                    return nil
                }
                return continuation
            }
            continuation?.resume()
        }
    }

    /// A JSON Web Key Set: `{"keys": [{"kty": "RSA", "kid", "n", "e", "alg": "RS256", "use": "sig"}]}`.
    struct KeySet: Decodable {
        struct Key: Decodable {
            var kty: String?
            var kid: String?
            var alg: String?
            var use: String?
            var n: String?
            var e: String?
        }

        var keys: [Key]

        /// The RS256 signing keys by `kid`; keys of other types or uses are left out.
        func signingKeys() -> [String: GoogleSigningKeys.Key] {
            var found: [String: GoogleSigningKeys.Key] = [:]
            for key in keys where key.kty == "RSA" && (key.alg ?? "RS256") == "RS256" && (key.use ?? "sig") == "sig" {
                guard let kid = key.kid, let n = key.n.flatMap({ Base64URL.decode(utf8: $0.utf8) }),
                      let e = key.e.flatMap({ Base64URL.decode(utf8: $0.utf8) }),
                      let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e)
                else { continue }
                found[kid] = publicKey
            }
            return found
        }
    }

    /// `max-age` of a `Cache-Control` value, in seconds.
    static func maxAge(_ cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]), seconds >= 0 {
                return TimeInterval(seconds)
            }
        }
        return nil
    }

    private static func download(_ url: String, http: HTTPClient, timeout: TimeAmount) async throws -> (keys: [String: Key], maxAge: TimeInterval?) {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw KeySetUnavailable(status: Int(response.status.code)) }
        let keys = try JSONDecoder().decode(KeySet.self, from: body).signingKeys()
        guard !keys.isEmpty else { throw KeySetUnavailable(status: Int(response.status.code)) }
        return (keys, maxAge(response.headers.first(name: "cache-control")))
    }

    struct KeySetUnavailable: Error {
        var status: Int
    }
}
