// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Foundation
import PostgresNIO
import Shared
import Testing
import TestSupport

@testable import Worker

/// `TRANSFER_BEHAVIOR`: whether a StoreKit sync moves a purchase linked to another user.
@Suite(.timeLimit(.minutes(3)))
struct TransferBehaviorTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [
        // behavior, signed (s after the newest event), holder active, moves
        (TransferBehavior.transfer, 1.0, true, true),
        (.transfer, 0, true, true),
        (.transfer, -1, false, false),
        (.transferIfInactive, 1, true, false),
        (.transferIfInactive, 1, false, true),
        (.transferIfInactive, -1, false, false),
        (.keep, 1, false, false),
        (.keep, 1, true, false),
    ])
    func whoGetsThePurchase(behavior: TransferBehavior, signedAfter seconds: TimeInterval, holderIsActive: Bool, moves: Bool) {
        let verdict = behavior.verdict(signedAt: Self.t0 + seconds, newestEvent: Self.t0, holderIsActive: holderIsActive)
        #expect((verdict == .move) == moves, "\(verdict)")
    }

    @Test func aPurchaseWithNoEventYetMayMove() {
        #expect(TransferBehavior.keep.verdict(signedAt: Self.t0, newestEvent: nil, holderIsActive: false) == .keep("TRANSFER_BEHAVIOR=keep"))
        #expect(TransferBehavior.transfer.verdict(signedAt: Self.t0, newestEvent: nil, holderIsActive: true) == .move)
    }

    @Test(arguments: [(nil, TransferBehavior.transfer), ("keep", .keep), ("TRANSFER_IF_INACTIVE", .transferIfInactive)] as [(String?, TransferBehavior)])
    func theSettingIsRead(text: String?, behavior: TransferBehavior) throws {
        #expect(try TransferBehavior(environment: EnvironmentValues(text.map { ["TRANSFER_BEHAVIOR": $0] } ?? [:])) == behavior)
    }

    @Test func anUnknownSettingIsRefused() {
        let error = #expect(throws: ConfigurationError.self) { try TransferBehavior(environment: EnvironmentValues(["TRANSFER_BEHAVIOR": "move"])) }
        #expect(error?.variable == "TRANSFER_BEHAVIOR")
    }

    /// Alice buys (no appAccountToken); Bob syncs a fresh copy, then Carol an old one. What moves
    /// is logged for operators and announced as `entitlement.transferred`.
    @Test(arguments: [
        (TransferBehavior.transfer, "bob"), (.transferIfInactive, "alice"), (.keep, "alice"),
    ])
    func aRestoreOnAnotherAccount(behavior: TransferBehavior, owner: String) async throws {
        try await SystemHarness.run(worker: ["TRANSFER_BEHAVIOR": behavior.rawValue]) { system in
            let start = Date().addingTimeInterval(-600)
            var purchase = subscription("7001", user: nil, purchased: start)
            purchase.signedDate = start.millisecondsSince1970
            try await system.sync(purchase, userID: "alice")
            try await system.drain()
            #expect(try await system.entitlement(userID: "alice")["is_active"] as? Bool == true)

            var fresh = purchase
            fresh.signedDate = start.addingTimeInterval(300).millisecondsSince1970
            try await system.sync(fresh, userID: "bob")
            try await system.drain()
            // An old copy of the signed transaction never moves it, whatever the behavior.
            var old = purchase
            old.signedDate = start.addingTimeInterval(60).millisecondsSince1970
            try await system.sync(old, userID: "carol")
            try await system.drain()

            for user in ["alice", "bob", "carol"] {
                let holds = try await system.entitlements(userID: user).contains { $0["product_id"] as? String == "pro.monthly" }
                #expect(holds == (user == owner), "\(user)")
            }
            let logged = try await system.db.strings(
                "SELECT from_user || '>' || to_user || ' ' || cause || ' ' || transaction_id FROM entitlement_transfers ORDER BY id")
            #expect(logged == (owner == "bob" ? ["alice>bob sync 7001"] : []))
            let transferred = try await system.db.scalar("SELECT count(*) FROM outgoing_events WHERE type = 'entitlement.transferred'")
            #expect(transferred == (owner == "bob" ? 1 : 0))
            let details = try await system.db.strings("SELECT coalesce(detail, '') FROM applied_events ORDER BY event_id")
            #expect(details.last?.contains("an old copy moves nothing") == true, "\(details)")

            // Operators see the log from the shell.
            let shown = try await OperatorCommandTests.worker(system.db, ["transfers", "--user", "bob", "--json"])
            #expect(shown.status == 0, "\(shown.stderr)")
            let listed = try #require(try OperatorCommandTests.json(shown.stdout) as? [String: [[String: Any]]])["transfers"] ?? []
            #expect(listed.map { "\($0["from_user"] ?? "")>\($0["to_user"] ?? "") \($0["transaction_id"] ?? "")" } == (owner == "bob" ? ["alice>bob 7001"] : []))
            #expect(try await OperatorCommandTests.worker(system.db, ["transfers"]).stdout.contains(owner == "bob" ? "sync of 7001" : "no transfers"))
        }
    }
}
