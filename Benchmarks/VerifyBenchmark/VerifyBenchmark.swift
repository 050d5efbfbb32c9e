// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DevSupport
import Foundation
import NIOCore
import Shared

/// Verification throughput on one core (one task, no concurrency): Stripe signature + envelope,
/// and Apple notification verify + decode (outer JWS and nested transaction and renewal info)
/// with a warm certificate cache and a cold one (a new verifier, so a full path validation, per
/// notification). See Benchmarks/README.md.
@main
struct VerifyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "VerifyBenchmark", abstract: "Verification operations per second on one core.")

    @Option(help: "Seconds per measurement.") var seconds: Double = 3

    func run() async throws {
        let pki = try ApplePKI.generate(name: "Bench")
        let signer = AppleJWSSigner(pki: pki)
        let transaction = SampleAppleTransaction(transactionId: "2000000000000001", appAccountToken: UUID().uuidString.lowercased())
        let body = ByteBuffer(data: try signer.notificationBody(
            type: "DID_RENEW", transaction: transaction, renewal: SampleAppleRenewalInfo(originalTransactionId: transaction.transactionId)))
        let configuration = AppleNotificationVerifier.Configuration(bundleIDs: ["com.example.sluice"])
        let warm = AppleNotificationVerifier(chainVerifier: AppleChainVerifier(trustedRoots: [pki.root]), configuration: configuration)

        let stripeSecret = "whsec_bench_0123456789"
        let stripeBody = try SampleStripeEvents.event(
            id: "evt_bench", type: "payment_intent.succeeded",
            object: SampleStripeEvents.paymentIntent(id: "pi_bench").merging(["description": String(repeating: "x", count: 1_500)]) { $1 })
        let stripeHeader = StripeSigner.header(body: stripeBody, secret: stripeSecret)
        let stripe = StripeSignatureVerifier(secrets: [stripeSecret])
        let stripeBuffer = ByteBuffer(data: stripeBody)

        print("verification on one core, \(seconds)s each (Stripe body \(stripeBody.count) bytes, Apple body \(body.readableBytes) bytes)")
        let stripeRate = try await Self.measure(seconds) {
            try stripe.verify(body: stripeBuffer.readableBytesView, header: stripeHeader, now: Date())
            _ = try StripeEventEnvelope.decode(stripeBuffer).record(payload: stripeBuffer)
        }
        print(String(format: "  Stripe verify + envelope:               %9.0f /s  (%.1f µs)", stripeRate, 1e6 / stripeRate))
        let warmRate = try await Self.measure(seconds) { _ = try await warm.verifyNotification(body: body, sandbox: true) }
        print(String(format: "  Apple notification, warm chain cache:   %9.0f /s  (%.1f µs)", warmRate, 1e6 / warmRate))
        let coldRate = try await Self.measure(seconds) {
            let cold = AppleNotificationVerifier(chainVerifier: AppleChainVerifier(trustedRoots: [pki.root]), configuration: configuration)
            _ = try await cold.verifyNotification(body: body, sandbox: true)
        }
        print(String(format: "  Apple notification, cold chain cache:   %9.0f /s  (%.1f µs)", coldRate, 1e6 / coldRate))
    }

    /// Runs `operation` back to back for `seconds`; returns operations per second.
    static func measure(_ seconds: Double, _ operation: () async throws -> Void) async throws -> Double {
        for _ in 0..<50 { try await operation() }
        let clock = ContinuousClock()
        let start = clock.now
        let end = start + .milliseconds(Int(seconds * 1000))
        var count = 0
        while clock.now < end {
            for _ in 0..<20 { try await operation() }
            count += 20
        }
        let elapsed = start.duration(to: clock.now)
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
