// SPDX-License-Identifier: Apache-2.0

/// Why the receiver refused a request; its ``Reason`` is the metrics label and the JSON error code.
///
/// Messages say which check failed, never a secret or a value that was compared against one.
public struct Rejection: Error, Equatable, CustomStringConvertible {
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        public let code: String
        /// `400` for what cannot be read, `401` for what was read and failed verification, `409` for
        /// what verified but contradicts what the provider signed, `503` for what could not be checked
        /// yet (the provider retries).
        public let status: Int

        private init(_ code: String, _ status: Int) {
            self.code = code
            self.status = status
        }

        /// No `Stripe-Signature` header.
        public static let missingSignature = Reason("missing_signature", 400)
        /// A `Stripe-Signature` header without `t=` or without any `v1=`.
        public static let malformedSignature = Reason("malformed_signature", 400)
        /// The body or JWS cannot be parsed.
        public static let malformed = Reason("malformed", 400)
        /// The body is larger than `MAX_BODY_BYTES`.
        public static let tooLarge = Reason("too_large", 413)
        /// A `Content-Type` other than `application/json` (Stripe and Apple send JSON).
        public static let unsupportedMediaType = Reason("unsupported_media_type", 415)
        /// The body did not arrive within `REQUEST_TIMEOUT_SECONDS` (a slow or stalled client).
        public static let requestTimeout = Reason("request_timeout", 408)
        /// No signature matches (Stripe HMAC, or the ES256 signature of a JWS).
        public static let badSignature = Reason("bad_signature", 401)
        /// The Stripe timestamp is outside the tolerance.
        public static let expired = Reason("expired", 401)
        /// A JWS `alg` other than ES256.
        public static let unsupportedAlgorithm = Reason("unsupported_algorithm", 401)
        /// The x5c chain does not lead to a trusted root at the payload's `signedDate`.
        public static let untrustedChain = Reason("untrusted_chain", 401)
        /// A leaf or intermediate without Apple's marker extension.
        public static let missingOID = Reason("missing_oid", 401)
        /// A bundle id not in `APPLE_BUNDLE_IDS`.
        public static let wrongBundle = Reason("wrong_bundle", 401)
        /// A Sandbox payload on the Production endpoint, or the reverse.
        public static let wrongEnvironment = Reason("wrong_environment", 401)
        /// An `appAppleId` other than `APPLE_APP_APPLE_ID` on a Production payload.
        public static let wrongApp = Reason("wrong_app", 401)
        /// The leaf or intermediate is revoked, by its issuer's OCSP answer (`APPLE_ONLINE_CHECKS`).
        public static let revoked = Reason("revoked", 401)
        /// The OCSP responder could not be reached or gave no usable answer (`APPLE_ONLINE_CHECKS`):
        /// nothing is accepted unchecked, and Apple sends the notification again later.
        public static let revocationUnknown = Reason("revocation_unknown", 503)
        /// A StoreKit sync whose `user_id` is not the transaction's signed `appAccountToken`.
        public static let userMismatch = Reason("user_mismatch", 409)
        /// A Google Play sync whose purchase is not of the `product_id` named.
        public static let productMismatch = Reason("product_mismatch", 409)
        /// A StoreKit sync of a purchase already synced for `SYNC_MAX_USERS_PER_TRANSACTION` other users.
        public static let tooManyUsers = Reason("too_many_users", 409)

        /// A Google Play push without an `Authorization: Bearer` token.
        public static let missingToken = Reason("missing_token", 401)
        /// A bearer token that is not a compact JWT with a `kid` and readable claims.
        public static let badToken = Reason("bad_token", 401)
        /// A token signed with a key Google does not publish, even after fetching its keys again.
        public static let unknownKey = Reason("unknown_key", 401)
        /// Google's signing keys could not be fetched and none are kept: Pub/Sub pushes again later.
        public static let keysUnavailable = Reason("keys_unavailable", 503)
        /// A token whose `iss` is not Google's.
        public static let wrongIssuer = Reason("wrong_issuer", 401)
        /// A token whose `aud` is not `GOOGLE_PUSH_AUDIENCE`.
        public static let wrongAudience = Reason("wrong_audience", 401)
        /// A token whose `email` is not `GOOGLE_PUSH_SERVICE_ACCOUNT`, or not verified.
        public static let wrongAccount = Reason("wrong_account", 401)
        /// A notification whose `packageName` is not in `GOOGLE_PLAY_PACKAGE_NAMES`.
        public static let wrongPackage = Reason("wrong_package", 401)

        public static let all: [Reason] = [
            .missingSignature, .malformedSignature, .malformed, .tooLarge, .unsupportedMediaType, .requestTimeout,
            .badSignature, .expired,
            .unsupportedAlgorithm, .untrustedChain, .missingOID, .revoked, .revocationUnknown, .wrongBundle, .wrongEnvironment,
            .wrongApp, .userMismatch, .tooManyUsers,
            .productMismatch, .missingToken, .badToken, .unknownKey, .keysUnavailable, .wrongIssuer, .wrongAudience, .wrongAccount, .wrongPackage,
        ]

        public var description: String { code }
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.code): \(message)" }
}
