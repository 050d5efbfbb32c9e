-- SPDX-License-Identifier: Apache-2.0
-- pgbench script of Benchmarks/announcer/announce.py: one batch's grants, four deposits (one of
-- two currencies) to four users in one call of sluice_deposit_balances, as a batch of applied
-- purchases makes them; every call's keys are new, so each makes four ledger rows due.
\set u random(1, 100000)
\set k random(1, 2000000000)
SELECT sluice_deposit_balances(jsonb_build_array(
    jsonb_build_object('user_id', 'u' || :u, 'adjustments', '{"credits": 5}'::jsonb, 'cause', 'purchase', 'idempotency_key', 'grant:a' || :k || ':' || :client_id),
    jsonb_build_object('user_id', 'v' || :u, 'adjustments', '{"credits": 5, "gems": 1}'::jsonb, 'cause', 'purchase', 'idempotency_key', 'grant:b' || :k || ':' || :client_id),
    jsonb_build_object('user_id', 'w' || :u, 'adjustments', '{"credits": 5}'::jsonb, 'cause', 'purchase', 'idempotency_key', 'grant:c' || :k || ':' || :client_id),
    jsonb_build_object('user_id', 'x' || :u, 'adjustments', '{"credits": 5}'::jsonb, 'cause', 'purchase', 'idempotency_key', 'grant:d' || :k || ':' || :client_id)));
