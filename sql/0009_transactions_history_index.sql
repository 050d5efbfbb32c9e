-- sluice:no-transaction
-- The transaction history pages newest first with a cursor (`starting_after`): the order's
-- columns, indexed. transactions is the largest state table, so the index is built CONCURRENTLY,
-- outside a transaction (Migration.noTransactionMarker above): writes go on while it is built.
-- Safe to run again from the start: a build that failed leaves an INVALID index, dropped first.
-- (Databases that applied an earlier 0005 already had this shape as transactions_user; it is
-- built once more under its new name and the old one dropped.)
DROP INDEX CONCURRENTLY IF EXISTS transactions_user_history;

CREATE INDEX CONCURRENTLY transactions_user_history
    ON transactions (user_id, (COALESCE(purchased_at, created_at)) DESC, created_at DESC, id DESC)
    WHERE user_id IS NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS transactions_user;
