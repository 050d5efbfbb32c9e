-- SPDX-License-Identifier: Apache-2.0
-- The advisory lock a user's balances are changed under (docs/credits.md): every function that
-- changes them takes it for the transaction (pg_advisory_xact_lock; the expiry sweep tries it and
-- skips a user another transaction holds), so one user's changes line up. (Two transactions that
-- lock several users in opposite orders can still deadlock: PostgreSQL ends one, and a batch of
-- events is retried.)
-- An SQL function of one expression: the planner puts the expression in place of each call.
CREATE OR REPLACE FUNCTION sluice_balance_lock(p_user text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('sluice_balance:' || p_user, 0)
$$;

-- Anyone may call it: it reads nothing.
