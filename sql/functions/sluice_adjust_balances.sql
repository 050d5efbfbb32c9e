-- SPDX-License-Identifier: Apache-2.0
-- The one way a balance changes (docs/credits.md): the API's spends and deposits, an operator's
-- adjustment, and the grants, take-backs and expiries of purchases all call it.
--
-- p_adjustments is {"credits": -20, "gems": 5}: every currency moves, or none does.
--   * One change at a time per user: a transaction-scoped advisory lock on the user, so that
--     concurrent spends of one balance line up (200 spends of 1 against 100 leave exactly 100
--     done and 0) and an idempotency key is checked and stored with no race.
--   * p_key: a change already made with this key for this user is not made again; the same
--     request (p_digest) gets the first one back ("replayed"), another request "key_reused".
--   * p_floor false (a spend): a currency that would go below zero refuses the whole change
--     ("insufficient", with what was short) and nothing is written.
--     p_floor true (a take-back): each currency stops at zero, and what could not be taken is
--     kept as the row's shortfall.
--   * A change that only adds (a deposit, a give-back) is made by sluice_deposit_balances, as the
--     grants of applied events are; with p_expires_at (credits given back to a grant that
--     expires), what it adds is kept as lots (balance_lots) that expire then. A change that also
--     takes may not carry p_expires_at: it is refused.
--   * Whatever takes a balance down takes it from the lots first: those of p_reverses (the grant
--     being taken back or expired) first, then the soonest to expire, so that the lots never hold
--     more than the balance and a spend uses what would expire before what would not.
--   * p_reverses, p_cause_event_id: recorded on the row (the grant it undoes; the provider event
--     it came from, for its announcement).
-- Returns {"outcome": applied | replayed | key_reused, "id": the ledger row's id} or
-- {"outcome": "insufficient", "insufficient": {"credits": {"balance": 3, "requested": -20}}}.
-- SECURITY DEFINER: ingest may call it, and may not write the tables any other way.
CREATE OR REPLACE FUNCTION sluice_adjust_balances(
    p_user text, p_adjustments jsonb, p_cause text, p_key text, p_digest bytea, p_floor boolean,
    p_reason text, p_metadata jsonb, p_actor text,
    p_expires_at timestamptz DEFAULT NULL, p_reverses bigint DEFAULT NULL, p_cause_event_id bigint DEFAULT NULL
) RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    stored balance_transactions;
    a record;
    current_amount bigint;
    short jsonb := '{}';
    applied jsonb := '{}';
    after jsonb := '{}';
    taken bigint;
    lowered boolean := false;
BEGIN
    PERFORM pg_advisory_xact_lock(sluice_balance_lock(p_user));
    IF p_key IS NOT NULL THEN
        -- By the key's index (sql/0043), the user checked on the row found: `(…) IS TRUE` keeps the
        -- planner off the user's index, which it rates the same for a generic plan and which
        -- reads the user's whole ledger (1.1–1.8 ms a lookup at 5,018 rows; Benchmarks/HISTORY.md).
        SELECT * INTO stored FROM balance_transactions WHERE idempotency_key = p_key AND (user_id = p_user) IS TRUE;
        IF FOUND THEN
            RETURN jsonb_build_object(
                'outcome', CASE WHEN stored.request_digest IS NOT DISTINCT FROM p_digest THEN 'replayed' ELSE 'key_reused' END,
                'id', stored.id);
        END IF;
    END IF;

    IF NOT EXISTS (SELECT 1 FROM jsonb_each_text(p_adjustments) WHERE value::bigint < 0) THEN
        -- Only deposits: nothing can go below zero.
        RETURN jsonb_build_object('outcome', 'applied', 'id', (sluice_deposit_balances(jsonb_build_array(jsonb_build_object(
            'user_id', p_user, 'adjustments', p_adjustments, 'cause', p_cause, 'idempotency_key', p_key, 'request_digest', p_digest,
            'reason', p_reason, 'metadata', p_metadata, 'actor', p_actor, 'expires_at', p_expires_at, 'reverses', p_reverses,
            'cause_event_id', p_cause_event_id))))[1]);
    END IF;

    IF p_expires_at IS NOT NULL THEN
        RAISE EXCEPTION 'credits that expire are only ever added, not %', p_adjustments;
    END IF;
    -- Sorted, so that the row locks are always taken in one order.
    FOR a IN SELECT key AS currency, value::bigint AS amount FROM jsonb_each_text(p_adjustments) ORDER BY key LOOP
        SELECT b.amount INTO current_amount FROM balances b WHERE b.user_id = p_user AND b.currency = a.currency FOR UPDATE;
        current_amount := COALESCE(current_amount, 0);
        taken := a.amount;
        IF current_amount + a.amount < 0 THEN
            IF NOT p_floor THEN
                short := short || jsonb_build_object(a.currency, jsonb_build_object('balance', current_amount, 'requested', a.amount));
                CONTINUE;
            END IF;
            taken := -current_amount;
        END IF;
        applied := applied || jsonb_build_object(a.currency, taken);
        after := after || jsonb_build_object(a.currency, current_amount + taken);
        lowered := lowered OR taken < 0;
        IF taken <> a.amount THEN
            short := short || jsonb_build_object(a.currency, taken - a.amount);
        END IF;
    END LOOP;
    IF NOT p_floor AND short <> '{}' THEN
        RETURN jsonb_build_object('outcome', 'insufficient', 'insufficient', short);
    END IF;

    INSERT INTO balances AS b (user_id, currency, amount)
    SELECT p_user, key, value::bigint FROM jsonb_each_text(after) ORDER BY key
    ON CONFLICT (user_id, currency) DO UPDATE SET amount = EXCLUDED.amount, updated_at = now();

    INSERT INTO balance_transactions (user_id, idempotency_key, request_digest, adjustments, applied, balances, shortfall, cause,
        reason, metadata, actor, expires_at, reverses, cause_event_id)
    VALUES (p_user, p_key, p_digest, p_adjustments, applied, after, NULLIF(short, '{}'), p_cause, p_reason, p_metadata, p_actor,
        p_expires_at, p_reverses, p_cause_event_id)
    RETURNING * INTO stored;

    IF lowered THEN
        -- Each lot keeps what is left once the amount taken is counted off the lots in order:
        -- running is the lots' total up to and with this one. A take-back of a grant that never
        -- expires (it has no lot) takes from the credits that never expire first: the lots lose
        -- only what the new balance cannot hold of them (else the user's expiring credits would
        -- pay for it, and as many of the refunded ones would outlive their expiry).
        UPDATE balance_lots l SET remaining = GREATEST(0, LEAST(l.remaining, o.running - o.taken))
        FROM (
            SELECT h.grant_position, h.currency,
                   CASE WHEN p_reverses IS NOT NULL AND NOT EXISTS (SELECT 1 FROM balance_lots g WHERE g.grant_position = p_reverses)
                        THEN GREATEST(0, sum(h.remaining) OVER (PARTITION BY h.currency) - (after->>x.key)::bigint)
                        ELSE -x.value::bigint END AS taken,
                   sum(h.remaining) OVER (PARTITION BY h.currency
                       ORDER BY h.grant_position IS NOT DISTINCT FROM p_reverses DESC, h.expires_at, h.grant_position) AS running
            FROM jsonb_each_text(applied) AS x
            JOIN balance_lots h ON h.user_id = p_user AND h.currency = x.key AND h.remaining > 0
            WHERE x.value::bigint < 0
        ) o
        WHERE l.grant_position = o.grant_position AND l.currency = o.currency AND o.running - l.remaining < o.taken;
    END IF;
    RETURN jsonb_build_object('outcome', 'applied', 'id', stored.id);
END $$;

-- Least privilege: ingest (the API) and the worker (the CLI, grants) may call it.
CALL sluice_allow_execute('sluice_adjust_balances(text, jsonb, text, text, bytea, boolean, text, jsonb, text, timestamptz, bigint, bigint)', 'sluice_ingest', 'sluice_worker');
