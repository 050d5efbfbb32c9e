-- SPDX-License-Identifier: Apache-2.0
-- A purchase linked late gives its user to the entitlement's transactions that had none
-- (StateStore.assignUser). In a batch applied without savepoints that assignment is now held
-- with the batch's other writes (HeldStateWrite.userAssignment) instead of sending them all
-- first and running an UPDATE of its own: it was the one statement per event left besides the
-- batch's (0.3 a mixed event, and each sent the held writes in a sluice_write_batch call of
-- their own, ~5 a batch of 16).
--
-- The worker has already given the user to the held saves the assignment reaches, and to the
-- rows it knows; this gives it to the database's other rows: the entitlement's transactions
-- without a user that no held save writes (a held row ends as its last held save leaves it).
-- Of several assignments of one entitlement the first counts: after it, the rows it reaches
-- have a user, as they would had each been run at once.
--
-- One indexed UPDATE per entitlement (a batch has one or two): as a join over the JSON, the
-- planner counted 100 assignments and, on a table it had seen small, kept a plan that scanned
-- every transaction without a user (0.67 ms a call for no row, pg_stat_statements and
-- auto_explain, ApplyBenchmark mixed).
CREATE OR REPLACE FUNCTION sluice_assign_held_users(p_states jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    a record;
    held uuid[] := ARRAY(SELECT held.id FROM jsonb_to_recordset(p_states->'transactions') AS held(id uuid));
BEGIN
    FOR a IN
        SELECT DISTINCT ON (x.entitlement_key) x.entitlement_key, x.user_id
        FROM jsonb_to_recordset(p_states->'assignments') AS x(n int, entitlement_key text, user_id text)
        ORDER BY x.entitlement_key, x.n
    LOOP
        UPDATE transactions t SET user_id = a.user_id, updated_at = now()
        WHERE t.entitlement_key = a.entitlement_key AND t.user_id IS NULL AND t.id <> ALL(held);
    END LOOP;
END $$;

-- Least privilege: only the worker (and the owner) may call it.
CALL sluice_allow_execute('sluice_assign_held_users(jsonb)', 'sluice_worker');
