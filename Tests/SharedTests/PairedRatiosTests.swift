// SPDX-License-Identifier: Apache-2.0
import DevSupport
import Testing

/// The summary of a benchmark's alternated pairs, checked against values worked out by hand.
struct PairedRatiosTests {
    @Test func threePairsGiveTheirMeanAndStudentsInterval() throws {
        let pairs = PairedRatios([0.9, 1.0, 1.1])
        #expect(abs(pairs.mean - 1.0) < 1e-12)
        #expect(abs(try #require(pairs.standardDeviation) - 0.1) < 1e-12)
        // t(0.975, 2) = 4.303; 4.303 × 0.1 / √3 = 0.2484
        let interval = try #require(pairs.interval95)
        #expect(abs(interval.lowerBound - 0.7516) < 1e-4 && abs(interval.upperBound - 1.2484) < 1e-4)
        #expect(pairs.summary == "mean 1.000 (95 % 0.752–1.248, 3 pairs)")
    }

    @Test(arguments: [(1, 12.706), (2, 4.303), (9, 2.262), (30, 2.042), (31, 1.96), (200, 1.96)])
    func theQuantileIsStudentsUpToThirtyDegreesThenTheNormal(degrees: Int, t: Double) {
        #expect(PairedRatios.t975(degreesOfFreedom: degrees) == t)
    }

    @Test func onePairHasNoInterval() {
        let pair = PairedRatios([0.913])
        #expect(pair.standardDeviation == nil && pair.interval95 == nil)
        #expect(pair.summary == "mean 0.913 (1 pair)")
    }

    @Test func tenPairsOfTheSameRatioHaveNoWidth() throws {
        let interval = try #require(PairedRatios(Array(repeating: 0.9, count: 10)).interval95)
        #expect(abs(interval.lowerBound - 0.9) < 1e-12 && abs(interval.upperBound - 0.9) < 1e-12)
    }
}
