// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import AsyncHTTPClient
import DevSupport
import Foundation
import NIOCore
import Shared
import NIOFoundationCompat
import NIOHTTP1

/// `sluice-dev send stripe|apple`: signs a sample event and posts it to a running `ingest`.
struct SendCommand: AsyncParsableCommand {
    enum Provider: String, ExpressibleByArgument, CaseIterable { case stripe, apple }

    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Sign a sample event and POST it to ingest.",
        discussion: HelpText.wrapped("""
            stripe  a payment_intent.succeeded for --user, signed with --secret. With --poison, one for a customer nobody knows and no user: stored, never applicable, dead-lettered after MAX_ATTEMPTS (to try the dead-letter tools on).
            apple   a SUBSCRIBED notification (Sandbox) for a new subscription, signed with the PKI in --pki, bought with the appAccountToken derived from --user (UUIDv5), which is first registered for --user (PUT /v1/iap/users/{user}/app-account-token, --api-key): both samples are the same person.
            """))

    @Argument(help: "stripe or apple")
    var provider: Provider

    @Option(help: "ingest's base URL.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "The Stripe endpoint secret (whsec_…).")
    var secret = "whsec_dev_secret"

    @Option(help: "The development PKI folder (from `sluice-dev pki`).")
    var pki = ".dev/pki"

    @Option(help: "The bundle id of the Apple sample.")
    var bundleId = "com.example.sluice"

    @Option(name: [.customLong("user"), .customLong("user-id")], help: "The user the sample belongs to.")
    var userId = "user_dev"

    @Option(help: "A server key of ingest (API_KEYS), to register the Apple sample's appAccountToken.")
    var apiKey = "sluice_dev_key_for_this_machine_only_0001"

    @Flag(help: "stripe only: a payment nobody can be found for, which the worker dead-letters.")
    var poison = false

    func validate() throws {
        if poison && provider != .stripe { throw ValidationError("--poison is for stripe") }
    }

    func run() async throws {
        var request: HTTPClientRequest
        let body: Data
        switch provider {
        case .stripe:
            let id = "evt_dev_\(UUID().uuidString.prefix(8).lowercased())"
            body = try SampleStripeEvents.event(
                id: id, type: "payment_intent.succeeded",
                object: SampleStripeEvents.paymentIntent(
                    id: "pi_dev_\(UUID().uuidString.prefix(8).lowercased())", userID: poison ? nil : userId,
                    customer: poison ? "cus_unknown_\(UUID().uuidString.prefix(8).lowercased())" : "cus_dev_\(userId)"))
            request = HTTPClientRequest(url: url + "/v1/webhooks/stripe")
            request.headers.add(name: "Stripe-Signature", value: StripeSigner.header(body: body, secret: secret))
        case .apple:
            let signer = AppleJWSSigner(pki: try ApplePKI.load(from: URL(fileURLWithPath: pki)))
            let transactionID = "\(Int.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))"
            let userToken = NameBasedUUID.version5(namespace: NameBasedUUID.developmentNamespace, name: userId).uuidString.lowercased()
            try await register(userToken)
            body = try signer.notificationBody(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY",
                transaction: SampleAppleTransaction(transactionId: transactionID, bundleId: bundleId, appAccountToken: userToken),
                renewal: SampleAppleRenewalInfo(originalTransactionId: transactionID))
            request = HTTPClientRequest(url: url + "/v1/webhooks/appstore-notifications?sandbox=true")
        }
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: body))
        try await send(request)
    }

    /// Registers the Apple sample's token for the user, as the app's server does at sign-up.
    private func register(_ token: String) async throws {
        let path = userId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? userId
        var request = HTTPClientRequest(url: url + "/v1/iap/users/\(path)/app-account-token")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"app_account_token":"\#(token)"}"#))
        print("appAccountToken \(token) for \(userId):", terminator: " ")
        try await send(request)
    }

    private func send(_ request: HTTPClientRequest) async throws {
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        } catch {
            print("")
            throw CommandFailure(HTTPFailureText.describe(error, peer: HTTPFailureText.peer(of: request.url), timeout: .seconds(10)))
        }
        let answer = try await response.body.collect(upTo: 1 << 20)
        print("\(response.status.code) \(String(buffer: answer))")
        guard (200..<300).contains(Int(response.status.code)) else { throw ExitCode.failure }
    }
}
