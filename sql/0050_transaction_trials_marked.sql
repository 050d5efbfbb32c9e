-- sluice:no-transaction
-- SPDX-License-Identifier: Apache-2.0
-- Rows written before 0049 were read as a trial when they were a subscription's period of no
-- amount (or of a type not known yet), and their currency grants were made so: they keep that
-- reading, so a grant made later for one of them (its user learned late) is the one it would
-- have had. Only rows from before 0049 was applied: a period of no amount a worker of this release
-- wrote since (a 100 % coupon's) is no trial, and stays so if this runs again. Outside a
-- transaction (see 0009), so the table is not locked while it is scanned: only the rows marked
-- are, until the statement ends.
UPDATE transactions SET is_trial = true
WHERE amount = 0 AND (product_type IS NULL OR product_type = 'auto_renewable') AND NOT is_trial
    AND created_at < (SELECT applied_at FROM schema_migrations WHERE version = '0049_transaction_trials');
