// SPDX-License-Identifier: Apache-2.0
import DevSupport
public import Foundation
public import Shared
import X509

/// What every fuzz target verifies against: the values the seed corpus was made with
/// (``FuzzSeeds``) and the test Apple root it was signed under (`Fuzz/Corpus/trust/root.pem`).
public enum FuzzFixtures {
    public static var now: Date { FuzzSeeds.now }

    public static let stripeVerifier = StripeSignatureVerifier(secrets: [FuzzSeeds.stripeSecret], toleranceSeconds: 300)

    /// `Fuzz/Corpus/trust/root.pem`, the root the Apple seeds chain to.
    static let trustedRoot: Certificate = {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Corpus/trust/root.pem").path
        do {
            return try AppleChainVerifier.loadRoots(paths: [path])[0]
        } catch {
            fatalError("fuzz targets need \(path) (written by sluice-dev fuzz-seeds): \(error)")
        }
    }()

    /// Trusts only ``trustedRoot``.
    public static let chainVerifier = AppleChainVerifier(trustedRoots: [trustedRoot])

    /// A `signedDate` inside the seed certificates' validity (they start a year before the day
    /// they were made), in Apple's milliseconds.
    public static let appleSignedDateMilliseconds = Int64((trustedRoot.notValidBefore.timeIntervalSince1970 + 400 * 86_400) * 1000)

    public static let appleVerifier = AppleNotificationVerifier(
        chainVerifier: chainVerifier, configuration: .init(bundleIDs: [FuzzSeeds.bundleID]))
}
