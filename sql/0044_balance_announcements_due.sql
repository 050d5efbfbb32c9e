-- SPDX-License-Identifier: Apache-2.0
-- The ledger rows not yet announced as balance.changed, by position: a queue of their own, filled
-- by a trigger on every ledger INSERT (sql/functions/sluice_queue_balance_announcements.sql) and emptied
-- by the announcer's DELETE … RETURNING (BalanceStore.takeUnannounced). It replaces
-- balance_transactions.announced_at (0038): marking a row announced was an UPDATE of a wide row
-- whose every index had to take the new version (announced_at is in a partial index's predicate,
-- so the update is never HOT) — ~34 µs a row against ~9 for a DELETE here, and a dead copy of
-- each ledger row for VACUUM (Benchmarks/HISTORY.md, fourteenth session).
--
-- The ledger is locked against writes first, until the migration commits — with the function
-- files and so the trigger (Migrator: the last pending transactional migrations and the
-- functions are one transaction): an announcer of the version before, marking rows, has committed (the copy below
-- sees its marks), and no row is written between the copy and the trigger. The column goes with
-- its index, so that such an announcer still running during a deploy fails to announce (and says
-- so) instead of announcing a second time.
LOCK TABLE balance_transactions IN EXCLUSIVE MODE;
CREATE TABLE IF NOT EXISTS balance_announcements_due (
    position bigint PRIMARY KEY
);
INSERT INTO balance_announcements_due (position)
SELECT position FROM balance_transactions WHERE announced_at IS NULL
ON CONFLICT DO NOTHING;
DROP INDEX IF EXISTS balance_transactions_unannounced;
ALTER TABLE balance_transactions DROP COLUMN IF EXISTS announced_at;
