// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Shared

/// `worker recover --source apple|stripe|google_play …`: fetches what the provider could not deliver and
/// stores it in the queue, as `worker run` does every `RECOVERY_INTERVAL_SECONDS`.
struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Store events the provider could not deliver: Apple's notification history, Stripe's events, Google Play's voided purchases.",
        discussion: """
            Asks the provider's API for the events of a window and stores the ones the queue does not \
            have yet, verified exactly like webhooks (Apple) or fetched with the API key (Stripe); the \
            workers apply them as usual. An event already stored is counted, never stored twice. \
            Apple keeps 180 days of history (30 in Sandbox), Stripe 30 days, Google Play lists voided \
            purchases of 30 days (a partial refund's purchase state is fetched with it: states \
            fetched). Prints found / already stored / stored / rejected (with reasons); exit 1 when \
            the provider cannot be asked.

            \(RecoverySession.help)
            """)

    enum Source: String, ExpressibleByArgument, CaseIterable {
        case apple, stripe
        case googlePlay = "google_play"
    }

    @Option(help: "apple, stripe or google_play.")
    var source: Source

    @Option(help: "production or sandbox: Apple's environment (default both); for Stripe, the mode of STRIPE_API_KEY (a test key is sandbox; the other mode is refused); refused with google_play, whose API has no environments.")
    var environment: String?

    @Option(help: "Start of the window: RFC 3339, or a duration ago (2h, 3d). Default 24h.")
    var since = "24h"

    @Option(help: "End of the window: RFC 3339, or a duration ago. Default now.")
    var until: String?

    @Flag(name: .customLong("dry-run"), help: "Count what would be stored; store nothing.")
    var dryRun = false

    @Flag(help: "Print the counts as JSON.")
    var json = false

    func validate() throws {
        guard TimeExpression.pointInTime(since) != nil else { throw ValidationError("--since must be RFC 3339 or a duration like 3d") }
        if let until, TimeExpression.pointInTime(until) == nil { throw ValidationError("--until must be RFC 3339 or a duration like 1h") }
        if let problem = Self.environmentProblem(environment, source: source) { throw ValidationError(problem) }
    }

    /// Why `--environment` cannot be taken with `source`, or `nil`: it must name an environment,
    /// and is refused where it would be ignored without a word (asked for Play's sandbox,
    /// recovering everything would look like the answer).
    static func environmentProblem(_ environment: String?, source: Source) -> String? {
        guard let environment else { return nil }
        if PurchaseEnvironment(rawValue: environment) == nil { return "--environment must be production or sandbox" }
        if source == .googlePlay { return "--environment does not apply to google_play: Play's voided purchases API has no environments" }
        return nil
    }

    /// Whether the stream named `name` is one `--source` and `--environment` ask for: the source's
    /// streams (`google_play:voided`; `stripe:sandbox`, named after its key's mode, when it is the
    /// environment asked for); of Apple's, which are per environment, each its whole history
    /// (`apple:sandbox:all`) or its failures, the whole histories, of the environment when one is given.
    static func recovers(_ name: String, source: Source, environment: String?) -> Bool {
        guard name.hasPrefix(source.rawValue + ":") else { return false }
        switch source {
        case .apple: return name.hasSuffix(":all") && (environment.map { name.contains(":\($0):") } ?? true)
        case .stripe: return environment.map { name == "stripe:\($0)" } ?? true
        case .googlePlay: return true
        }
    }

    func run() async throws {
        let from = TimeExpression.pointInTime(since) ?? Date()
        let to = until.flatMap { TimeExpression.pointInTime($0) } ?? Date()
        let (source, environment, dryRun, json) = (source, environment, dryRun, self.json)
        let report = try await RecoverySession.with { recovery, logger in
            let streams = recovery.streams.filter { Self.recovers($0.name, source: source, environment: environment) }
            guard !streams.isEmpty else {
                if source == .stripe, let environment, let keyed = recovery.streams.first(where: { $0.name.hasPrefix("stripe:") }) {
                    let mode = keyed.name.dropFirst("stripe:".count)
                    throw CommandFailure("--environment \(environment): STRIPE_API_KEY is a \(mode) key, and a key recovers its own mode only")
                }
                switch source {
                case .apple: throw CommandFailure("Apple recovery is off: set APPLE_API_KEY_ID, APPLE_API_ISSUER_ID and APPLE_API_PRIVATE_KEY_FILE")
                case .stripe: throw CommandFailure("Stripe recovery is off: set STRIPE_API_KEY")
                case .googlePlay: throw CommandFailure("Google Play recovery is off: set GOOGLE_PLAY_SERVICE_ACCOUNT_FILE and GOOGLE_PLAY_PACKAGE_NAMES")
                }
            }
            var report = RecoveryReport()
            for stream in streams {
                do {
                    report.add(try await stream.recover(from, to, dryRun, logger))
                } catch let error as ProviderAPIError {
                    throw CommandFailure("\(stream.name): \(error)")
                }
            }
            return report
        }
        OperatorSession.show(json ? try OperatorSession.json(report) : (dryRun ? "dry run: " : "") + report.text)
    }
}
