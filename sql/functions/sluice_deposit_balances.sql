-- SPDX-License-Identifier: Apache-2.0
-- Deposits (docs/credits.md), one or many in one statement: the grants of a batch of applied
-- events (sluice_write_applied_batch), and every change of sluice_adjust_balances that only adds
-- (a deposit, an operator's credit, a give-back). A change that adds to one currency and takes
-- from another is sluice_adjust_balances' own.
--
-- p_deposits is a JSON array of ledger rows to make, in order, each an object with the columns
-- of balance_transactions it sets: user_id, adjustments ({"credits": 500}: no amount below zero),
-- cause, and optionally idempotency_key, request_digest, reason, metadata, actor, expires_at,
-- reverses, cause_event_id.
--   * Each user's lock (the one sluice_adjust_balances takes) is taken first, users in name order.
--   * A deposit whose key this user's ledger already has, or an earlier deposit of this call has,
--     is not made again (the caller that answers for a key, sluice_adjust_balances, looked first).
--     A purchase's grant (`grant:` + its transaction, CurrencyGrantDecision.keys) is made once
--     whoever it was for: one named again for the user the purchase passed to since (a refund
--     reversed after a transfer), in the ledger or earlier in this call, is not made again.
--   * Each row's `balances` is the touched currencies' balances after it, the deposits of this
--     call counted in order; each balance moves once, by the sum of the call's deposits.
--   * A deposit with expires_at keeps what it adds as lots (balance_lots) that expire then.
-- Returns the ids of the rows made, in order.
--
-- One statement for a batch's grants, not a call of sluice_adjust_balances per grant: each grant
-- was 81 µs of PostgreSQL alone that way, ~45 µs here for a batch of 11 (Benchmarks/HISTORY.md).
-- SECURITY DEFINER: the worker may call it; ingest may not (it changes balances only through
-- sluice_adjust_balances, which checks what a deposit may not skip).
CREATE OR REPLACE FUNCTION sluice_deposit_balances(p_deposits jsonb) RETURNS uuid[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    made uuid[];
    taking record;
BEGIN
    -- One jsonpath test of the whole argument first (a set-returning SELECT over every amount
    -- was ~6 % of a call); only an amount that is not a JSON number, or is below zero, is looked
    -- at as before (a string "-5" is cast, and refused, as it always was).
    IF jsonb_path_exists(p_deposits, '$[*].adjustments.* ? (@.type() != "number" || @ < 0)') THEN
        SELECT d->>'idempotency_key' AS key, x.key AS currency, x.value AS amount INTO taking
        FROM jsonb_array_elements(p_deposits) AS d, jsonb_each_text(d->'adjustments') AS x WHERE x.value::bigint < 0 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'a deposit only adds to balances: % % under key %', taking.amount, taking.currency, COALESCE(taking.key, '(none)');
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock(sluice_balance_lock(users.user_id))
    FROM (SELECT DISTINCT d->>'user_id' AS user_id FROM jsonb_array_elements(p_deposits) AS d ORDER BY 1) AS users;

    WITH input AS (
        SELECT * FROM ROWS FROM (jsonb_to_recordset(p_deposits) AS (user_id text, adjustments jsonb, cause text, idempotency_key text,
                request_digest bytea, reason text, metadata jsonb, actor text, expires_at timestamptz, reverses bigint, cause_event_id bigint))
            WITH ORDINALITY AS x(user_id, adjustments, cause, idempotency_key, request_digest, reason, metadata, actor, expires_at, reverses,
                cause_event_id, n)
    ),
    -- Whose key it is: the user's, or anyone's (NULL) for a purchase's grant.
    keyed AS (
        SELECT input.*, CASE WHEN starts_with(idempotency_key, 'grant:') THEN NULL ELSE user_id END AS holder FROM input
    ),
    -- The deposits to make, each with the id its row will have (so that its lots can name it).
    fresh AS (
        SELECT DISTINCT ON (i.holder, i.idempotency_key, CASE WHEN i.idempotency_key IS NULL THEN i.n END) i.*, gen_random_uuid() AS id
        FROM keyed i
        -- One probe of the key's index a deposit (LIMIT: never a scan of the ledger, whatever the
        -- planner guesses of the input's size; `(…) IS TRUE`: never of the user's ledger either,
        -- as sluice_adjust_balances says).
        LEFT JOIN LATERAL (
            SELECT true AS seen FROM balance_transactions t
            WHERE t.idempotency_key = i.idempotency_key AND (t.user_id = i.holder OR i.holder IS NULL) IS TRUE
            LIMIT 1
        ) earlier ON true
        WHERE earlier.seen IS NULL
        ORDER BY i.holder, i.idempotency_key, CASE WHEN i.idempotency_key IS NULL THEN i.n END, i.n
    ),
    amounts AS (
        SELECT f.n, f.id, f.user_id, x.key AS currency, x.value::bigint AS amount,
               sum(x.value::bigint) OVER (PARTITION BY f.user_id, x.key ORDER BY f.n) AS running
        FROM fresh f, jsonb_each_text(f.adjustments) AS x
    ),
    ledger AS (
        INSERT INTO balance_transactions (id, user_id, idempotency_key, request_digest, adjustments, applied, balances, cause, reason,
            metadata, actor, expires_at, reverses, cause_event_id)
        SELECT f.id, f.user_id, f.idempotency_key, f.request_digest, f.adjustments, f.adjustments,
            COALESCE((SELECT jsonb_object_agg(a.currency, a.running
                          + COALESCE((SELECT b.amount FROM balances b WHERE b.user_id = a.user_id AND b.currency = a.currency), 0))
                      FROM amounts a WHERE a.n = f.n), '{}'),
            f.cause, f.reason, f.metadata, f.actor, f.expires_at, f.reverses, f.cause_event_id
        FROM fresh f ORDER BY f.n
        RETURNING position, id, expires_at
    ),
    moved AS (
        -- Row locks in one order: users, then currencies.
        INSERT INTO balances AS b (user_id, currency, amount)
        SELECT user_id, currency, sum(amount) FROM amounts GROUP BY user_id, currency ORDER BY user_id, currency
        ON CONFLICT (user_id, currency) DO UPDATE SET amount = b.amount + EXCLUDED.amount, updated_at = now()
    ),
    lots AS (
        INSERT INTO balance_lots (grant_position, user_id, currency, remaining, expires_at)
        SELECT l.position, a.user_id, a.currency, a.amount, l.expires_at
        FROM ledger l JOIN amounts a ON a.id = l.id
        WHERE l.expires_at IS NOT NULL AND a.amount > 0
    )
    SELECT array_agg(id ORDER BY position) INTO made FROM ledger;
    RETURN COALESCE(made, '{}');
END $$;

-- Least privilege: only the worker (the grants of applied events) calls it straight;
-- sluice_adjust_balances calls it as its owner.
CALL sluice_allow_execute('sluice_deposit_balances(jsonb)', 'sluice_worker');
