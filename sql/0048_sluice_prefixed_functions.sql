-- SPDX-License-Identifier: Apache-2.0
-- Every function and procedure Sluice makes is named sluice_…: it shares its schema with the
-- app's own objects, where `allow_execute` or `notify_user_changed` could be someone else's.
-- Sluice's own triggers on the unprefixed trigger functions of earlier releases are dropped,
-- then those three functions; sql/functions/ makes their sluice_ successors and re-creates the
-- triggers under the same names in this same transaction (Migrator), so no write commits between
-- without them. A function some other object still uses is left in place, with a notice: Sluice
-- removes what it made, never what another depends on. A release before this one, migrated
-- again, re-creates its old names and points the same triggers back at them.
DROP TRIGGER IF EXISTS transactions_notify_user ON transactions;
DROP TRIGGER IF EXISTS entitlements_notify_user ON entitlements;
DROP TRIGGER IF EXISTS balance_transactions_announce ON balance_transactions;
DO $$
DECLARE
    statement text;
BEGIN
    FOREACH statement IN ARRAY ARRAY[
        'DROP FUNCTION IF EXISTS notify_user_changed()',
        'DROP FUNCTION IF EXISTS queue_balance_announcements()',
        'DROP PROCEDURE IF EXISTS allow_execute(regprocedure, text[])'
    ] LOOP
        BEGIN
            EXECUTE statement;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE 'left in place, another object uses it: % (%)', statement, SQLERRM;
        END;
    END LOOP;
END $$;
