// SPDX-License-Identifier: Apache-2.0
public import Foundation

extension Date {
    /// 2000-01-01T00:00:00Z, where PostgreSQL counts its timestamps from.
    static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    /// The `timestamptz` PostgresNIO writes for this date: whole microseconds since 2000-01-01,
    /// truncated. A JSON argument that carries this count stores the same instant as a bind
    /// parameter would.
    public var postgresMicroseconds: Int64 {
        Int64(timeIntervalSince(Self.postgresEpoch) * 1_000_000)
    }

    /// The `timestamptz` PostgresNIO writes for this date (``postgresMicroseconds``), as
    /// PostgresNIO decodes it: the same arithmetic, so the same `Date`.
    var asStoredInPostgres: Date {
        Date(timeInterval: Double(postgresMicroseconds) / 1_000_000, since: Self.postgresEpoch)
    }
}
