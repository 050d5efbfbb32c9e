// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import Ingest

/// When the read API may read the replica: the bound on its lag, from the primary's WAL position
/// samples and the replica's replay position, without a database.
struct ReplicaLagStateMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [
        ("16/B374D848", UInt64(0x16_B374_D848)), ("0/0", 0), ("FFFFFFFF/FFFFFFFF", UInt64.max), ("a/1", UInt64(0xA_0000_0001)),
    ] as [(String, UInt64)])
    func walPositionsParseAsPostgreSQLWritesThem(text: String, value: UInt64) throws {
        let position = try #require(WALPosition(text))
        #expect(position.value == value)
        #expect(WALPosition(position.description) == position)
    }

    @Test(arguments: ["", "16", "16/", "/1", "1/2/3", "G/0", "123456789/0", "-1/0", " 1/0"])
    func otherTextIsNoPosition(text: String) {
        #expect(WALPosition(text) == nil)
    }

    @Test func nothingKnownReadsThePrimary() {
        var machine = ReplicaLag.StateMachine()
        #expect(machine.lagBound(now: t0) == nil)
        #expect(!machine.readsReplica(now: t0, maximumLag: 5))
        machine.primarySampled(WALPosition(100), at: t0)
        #expect(!machine.readsReplica(now: t0, maximumLag: 5), "sampled, not yet replayed")
        machine.replicaReplayed(WALPosition(99))
        #expect(!machine.readsReplica(now: t0, maximumLag: 5), "one byte short")
    }

    @Test func theBoundIsTheTimeOfTheNewestReplayedSample() {
        var machine = ReplicaLag.StateMachine()
        machine.primarySampled(WALPosition(100), at: t0)
        machine.primarySampled(WALPosition(200), at: t0 + 1)
        machine.primarySampled(WALPosition(200), at: t0 + 2)  // an idle primary: the position stands still
        machine.primarySampled(WALPosition(300), at: t0 + 3)
        machine.replicaReplayed(WALPosition(250))
        #expect(machine.lagBound(now: t0 + 4) == 2, "it holds everything committed before t0 + 2")
        #expect(machine.pending.map(\.position) == [WALPosition(300)])
        #expect(machine.readsReplica(now: t0 + 4, maximumLag: 2))
        #expect(!machine.readsReplica(now: t0 + 4.5, maximumLag: 2), "no news: the bound grows with the clock")
        machine.replicaReplayed(WALPosition(300))
        #expect(machine.lagBound(now: t0 + 4.5) == 1.5)
        machine.replicaReplayed(WALPosition(250))
        #expect(machine.lagBound(now: t0 + 4.5) == 1.5, "an older answer takes nothing back")
    }

    @Test func aStalledReplicaFallsBehindTheBoundAndIsLeft() {
        var machine = ReplicaLag.StateMachine(capacity: 4)
        machine.primarySampled(WALPosition(10), at: t0)
        machine.replicaReplayed(WALPosition(10))
        for second in 1...10 { machine.primarySampled(WALPosition(UInt64(10 + second)), at: t0 + Double(second)) }
        #expect(machine.pending.count == 4, "bounded memory while the replica stalls")
        #expect(machine.lagBound(now: t0 + 10) == 10)
        #expect(!machine.readsReplica(now: t0 + 10, maximumLag: 5))
        machine.replicaReplayed(WALPosition(20))
        #expect(machine.lagBound(now: t0 + 10) == 0)
        #expect(machine.readsReplica(now: t0 + 10, maximumLag: 5))
    }

    @Test func aFailureSendsReadsToThePrimaryUntilTheReplicaCatchesUpAgain() {
        var machine = ReplicaLag.StateMachine()
        machine.primarySampled(WALPosition(10), at: t0)
        machine.replicaReplayed(WALPosition(10))
        #expect(machine.readsReplica(now: t0, maximumLag: 5))
        machine.replicaFailed()
        #expect(!machine.readsReplica(now: t0, maximumLag: 5))
        machine.primarySampled(WALPosition(11), at: t0 + 1)
        machine.replicaReplayed(WALPosition(11))
        #expect(machine.readsReplica(now: t0 + 1, maximumLag: 5))
    }
}
