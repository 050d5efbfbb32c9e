// SPDX-License-Identifier: Apache-2.0
// Verification on one core with ordo-one/benchmark: Stripe signature + envelope of a 2 KB event,
// and an App Store notification verified and decoded (outer JWS, nested transaction and renewal
// info) with a warm and a cold certificate-chain cache; wall clock, throughput and mallocs per
// operation. Run: SLUICE_BENCH=1 swift package --scratch-path .build-bench benchmark --target VerificationBenchmarks
import Benchmark
import DevSupport
import Foundation
import NIOCore
import NIOFoundationCompat
import Shared

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: .count(1_000_000))

    let stripeSecret = "whsec_bench_0123456789"
    let stripeBody = try! SampleStripeEvents.event(
        id: "evt_bench", type: "payment_intent.succeeded",
        object: SampleStripeEvents.paymentIntent(id: "pi_bench").merging(["description": String(repeating: "x", count: 1_500)]) { $1 })
    let stripeBuffer = ByteBuffer(data: stripeBody)
    let stripe = StripeSignatureVerifier(secrets: [stripeSecret])

    Benchmark("Stripe verify + envelope (2 KB event)") { benchmark in
        // Signed inside the benchmark's clock so `t=` stays within the tolerance however long it runs.
        let header = StripeSigner.header(body: stripeBody, secret: stripeSecret)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try stripe.verify(body: stripeBuffer.readableBytesView, header: header, now: Date())
            blackHole(try StripeEventEnvelope.decode(stripeBuffer).record(payload: stripeBuffer))
        }
    }

    let pki = try! ApplePKI.generate(name: "Bench")
    let signer = AppleJWSSigner(pki: pki)
    let transaction = SampleAppleTransaction(transactionId: "2000000000000001", appAccountToken: UUID().uuidString.lowercased())
    let appleBody = ByteBuffer(data: try! signer.notificationBody(
        type: "DID_RENEW", transaction: transaction, renewal: SampleAppleRenewalInfo(originalTransactionId: transaction.transactionId)))
    let configuration = AppleNotificationVerifier.Configuration(bundleIDs: ["com.example.sluice"])
    let warm = AppleNotificationVerifier(chainVerifier: AppleChainVerifier(trustedRoots: [pki.root]), configuration: configuration)

    Benchmark("Apple notification verify + decode, warm chain cache") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try await warm.verifyNotification(body: appleBody, sandbox: true))
        }
    }

    Benchmark("Apple notification verify + decode, cold chain cache") { benchmark in
        for _ in benchmark.scaledIterations {
            let cold = AppleNotificationVerifier(chainVerifier: AppleChainVerifier(trustedRoots: [pki.root]), configuration: configuration)
            blackHole(try await cold.verifyNotification(body: appleBody, sandbox: true))
        }
    }
}
