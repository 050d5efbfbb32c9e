// SPDX-License-Identifier: Apache-2.0
import Crypto
public import DevSupport
public import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwiftASN1
import Synchronization
public import X509

/// An OCSP responder for a test ``ApplePKI``, built from RFC 6960: it reads each `CertID` of a
/// `POST`ed `application/ocsp-request` and answers *good* (or *revoked*, for what ``revoke(_:)``
/// named) in a `BasicOCSPResponse` signed by the certificate's issuer, as a CA's own responder does.
public final class OCSPResponderStandIn: Sendable {
    /// What the responder does with the next requests.
    public enum Behaviour: Sendable {
        /// Signed answers, valid for `validity` from now.
        case answer(validity: TimeInterval)
        /// `HTTP 500` with no body.
        case httpError
        /// `200` with bytes that are no OCSP answer.
        case garbage
    }

    private struct State {
        var pki: ApplePKI?
        var revoked: Set<[UInt8]> = []
        var behaviour = Behaviour.answer(validity: 3_600)
        var requests = 0
        /// How long each answer takes (a slow responder).
        var delay = Duration.zero
    }

    private let state = Mutex(State())

    /// Runs a responder on a free local port, with a new chain whose leaf and intermediate name it.
    public static func run<Result: Sendable>(
        name: String = "OCSP", _ body: @Sendable @escaping (OCSPResponderStandIn, ApplePKI) async throws -> Result
    ) async throws -> Result {
        let responder = OCSPResponderStandIn()
        return try await LocalHTTPServer.run(responder.router) { baseURL in
            let pki = try ApplePKI.generate(name: name, ocspResponder: baseURL)
            responder.state.withLock { $0.pki = pki }
            return try await body(responder, pki)
        }
    }

    public func revoke(_ certificate: Certificate) {
        state.withLock { _ = $0.revoked.insert(Self.magnitude(certificate.serialNumber.bytes)) }
    }

    public func behave(_ behaviour: Behaviour) {
        state.withLock { $0.behaviour = behaviour }
    }

    /// Makes each answer take `delay`.
    public func answer(after delay: Duration) {
        state.withLock { $0.delay = delay }
    }

    /// OCSP requests received so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    private var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("/ocsp/:issuer") { request, context -> Response in
            let body = Array(buffer: try await request.body.collect(upTo: 65_536))
            let (state, issuerIsRoot) = self.state.withLock { state in
                state.requests += 1
                return (state, context.parameters.get("issuer") == "root")
            }
            try await Task.sleep(for: state.delay)
            guard let pki = state.pki, let issuerKey = issuerIsRoot ? pki.rootKey : pki.intermediateKey else {
                return Response(status: .notFound)
            }
            switch state.behaviour {
            case .httpError:
                return Response(status: .internalServerError)
            case .garbage:
                return Self.ocspResponse(Array("not an OCSP answer".utf8))
            case .answer(let validity):
                let answer = try Self.answer(
                    to: body, issuer: issuerIsRoot ? pki.root : pki.intermediate, issuerKey: issuerKey, revoked: state.revoked,
                    validity: validity)
                return Self.ocspResponse(answer)
            }
        }
        return router
    }

    private static func ocspResponse(_ bytes: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: "application/ocsp-response"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // MARK: RFC 6960, 4.1 and 4.2

    /// The `CertID` of each `Request` in an `OCSPRequest`.
    static func certIDs(in request: [UInt8]) throws -> [ASN1Node] {
        // OCSPRequest ::= SEQUENCE { tbsRequest TBSRequest, optionalSignature [0] EXPLICIT Signature OPTIONAL }
        // TBSRequest ::= SEQUENCE { version [0] …, requestorName [1] …, requestList SEQUENCE OF Request, requestExtensions [2] … }
        guard case .constructed(let outer) = try DER.parse(request).content,
              let tbs = outer.first(where: { _ in true }), case .constructed(let tbsFields) = tbs.content,
              let list = tbsFields.first(where: { $0.identifier == .sequence }), case .constructed(let requests) = list.content
        else { throw ASN1Error.invalidASN1Object(reason: "not an OCSPRequest") }
        // Request ::= SEQUENCE { reqCert CertID, singleRequestExtensions [0] EXPLICIT Extensions OPTIONAL }
        return try requests.map { request in
            guard case .constructed(let fields) = request.content, let certID = fields.first(where: { _ in true }) else {
                throw ASN1Error.invalidASN1Object(reason: "a Request without a CertID")
            }
            return certID
        }
    }

    /// `CertID ::= SEQUENCE { hashAlgorithm, issuerNameHash, issuerKeyHash, serialNumber CertificateSerialNumber }`
    static func serialNumber(of certID: ASN1Node) -> [UInt8] {
        guard case .constructed(let fields) = certID.content, let serial = Array(fields).last,
              case .primitive(let bytes) = serial.content
        else { return [] }
        return magnitude(bytes)
    }

    /// A serial number's bytes without the leading zero a DER INTEGER has when its top bit is set.
    static func magnitude(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        Array(bytes.drop(while: { $0 == 0 }))
    }

    static func answer(
        to request: [UInt8], issuer: Certificate, issuerKey: P256.Signing.PrivateKey, revoked: Set<[UInt8]>, validity: TimeInterval
    ) throws -> [UInt8] {
        let now = Date()
        var responseData = DER.Serializer()
        // ResponseData ::= SEQUENCE { version [0] DEFAULT v1, responderID, producedAt, responses SEQUENCE OF SingleResponse }
        try responseData.appendConstructedNode(identifier: .sequence) { data in
            try data.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { try $0.serialize(issuer.subject) }
            try data.serialize(try generalizedTime(now))
            try data.appendConstructedNode(identifier: .sequence) { responses in
                for certID in try certIDs(in: request) {
                    // SingleResponse ::= SEQUENCE { certID, certStatus, thisUpdate, nextUpdate [0] EXPLICIT OPTIONAL }
                    try responses.appendConstructedNode(identifier: .sequence) { single in
                        single.serialize(certID)
                        if revoked.contains(serialNumber(of: certID)) {
                            // revoked [1] IMPLICIT RevokedInfo ::= SEQUENCE { revocationTime GeneralizedTime, … }
                            try single.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) {
                                try $0.serialize(try generalizedTime(now.addingTimeInterval(-3_600)))
                            }
                        } else {
                            // good [0] IMPLICIT NULL
                            single.appendPrimitiveNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { _ in }
                        }
                        try single.serialize(try generalizedTime(now.addingTimeInterval(-60)))
                        try single.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) {
                            try $0.serialize(try generalizedTime(now.addingTimeInterval(validity)))
                        }
                    }
                }
            }
        }
        let signed = responseData.serializedBytes
        let signature = try issuerKey.signature(for: signed).derRepresentation
        var basic = DER.Serializer()
        // BasicOCSPResponse ::= SEQUENCE { tbsResponseData, signatureAlgorithm, signature BIT STRING }
        try basic.appendConstructedNode(identifier: .sequence) { basic in
            basic.serializeRawBytes(signed)
            try basic.appendConstructedNode(identifier: .sequence) { try $0.serialize(ecdsaWithSHA256) }
            try basic.serialize(ASN1BitString(bytes: ArraySlice(signature)))
        }
        var response = DER.Serializer()
        // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED (successful 0), responseBytes [0] EXPLICIT ResponseBytes }
        try response.appendConstructedNode(identifier: .sequence) { response in
            response.appendPrimitiveNode(identifier: .enumerated) { $0.append(0) }
            try response.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { tagged in
                try tagged.appendConstructedNode(identifier: .sequence) { bytes in
                    try bytes.serialize(basicResponseType)
                    try bytes.serialize(ASN1OctetString(contentBytes: ArraySlice(basic.serializedBytes)))
                }
            }
        }
        return response.serializedBytes
    }

    static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]
    static let basicResponseType: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]

    static func generalizedTime(_ date: Date) throws -> GeneralizedTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try GeneralizedTime(
            year: parts.year!, month: parts.month!, day: parts.day!, hours: parts.hour!, minutes: parts.minute!, seconds: parts.second!,
            fractionalSeconds: 0)
    }
}
