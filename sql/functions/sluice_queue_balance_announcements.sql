-- SPDX-License-Identifier: Apache-2.0
-- Every ledger row is due for its balance.changed announcement from the moment it is written, in
-- the same transaction (sql/0044): one rule, whichever function wrote the row (deposits,
-- sluice_adjust_balances). Once per statement, over the rows it inserted, so a batch's grants
-- queue in one INSERT. The ledger is written only by SECURITY DEFINER functions, so this runs as
-- their owner whoever called them.
CREATE OR REPLACE FUNCTION sluice_queue_balance_announcements() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO balance_announcements_due (position) SELECT position FROM written;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER balance_transactions_announce AFTER INSERT ON balance_transactions
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION sluice_queue_balance_announcements();
