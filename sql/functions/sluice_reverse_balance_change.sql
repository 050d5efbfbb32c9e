-- SPDX-License-Identifier: Apache-2.0
-- Undoes a share of a grant, found by its idempotency key (docs/credits.md), for the user it was
-- made for, once under p_key, through sluice_adjust_balances:
--   * p_cause 'refund' (a take-back, p_floor true): the refunded share of the grant is
--     p_numerator / p_denominator of each currency it granted, rounded up (1/3 of 500 is 167).
--     The share is the payment's whole refund so far: what earlier take-backs of this grant asked
--     (a refund in part, keyed `…#<amount>`, always; a whole refund or dispute since the grant was
--     last given back) and what of it, or of what was given back, already expired, are not asked
--     again, so a second partial refund takes only the difference, and a refund after the
--     period's credits expired takes only what is left to take.
--   * p_cause 'refund_reversal' (a give-back): gives back what the whole refunds and disputes
--     since the last give-back took (a refund in part stands: the payment was not reversed);
--     credits of a grant that expires are given back to expire with it (at the next sweep when
--     that time has passed).
-- A grant may be taken back and given back more than once (a dispute won, then a refund; Apple's
-- REFUND, REFUND_REVERSED, REFUND): a whole take-back or a give-back is made once under p_key in
-- each such round, the round being the number of give-backs made so far (p_key, then p_key@1,
-- p_key@2 …), so the key of an earlier round does not stop the next one. A take-back in part
-- (`…#<amount>`) stands through the rounds and keeps its key.
-- Returns sluice_adjust_balances' answer, or {"outcome": "nothing"} when there is no grant (the
-- purchase granted nothing) or nothing is left to move.
CREATE OR REPLACE FUNCTION sluice_reverse_balance_change(
    p_of_key text, p_numerator bigint, p_denominator bigint, p_cause text, p_key text, p_floor boolean, p_reason text,
    p_cause_event_id bigint DEFAULT NULL
) RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    earlier balance_transactions;
    last_given_back bigint;
    given_back bigint;  -- give-backs made so far: the round of a whole take-back or give-back
    moved jsonb;
    lot_expiry timestamptz;  -- when given-back credits expire: the grant's own time
BEGIN
    IF p_numerator <= 0 OR p_denominator <= 0 OR p_numerator > p_denominator THEN
        RAISE EXCEPTION 'a share must be a fraction from 0 to 1, not %/%', p_numerator, p_denominator;
    END IF;
    IF p_cause NOT IN ('refund', 'refund_reversal') THEN
        RAISE EXCEPTION 'a grant is reversed by a refund or a refund_reversal, not %', p_cause;
    END IF;
    -- A worker of the release before names the take-back it gives back, not the grant.
    IF p_of_key LIKE 'take_back:%' THEN
        p_of_key := 'grant:' || substring(p_of_key FROM length('take_back:') + 1);
    END IF;
    SELECT * INTO earlier FROM balance_transactions WHERE idempotency_key = p_of_key ORDER BY position LIMIT 1;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('outcome', 'nothing');
    END IF;
    -- Under the user's lock, so that the rows counted here are the last ones.
    PERFORM pg_advisory_xact_lock(sluice_balance_lock(earlier.user_id));
    SELECT COALESCE(max(position), 0), count(*) INTO last_given_back, given_back
    FROM balance_transactions WHERE reverses = earlier.position AND cause = 'refund_reversal';
    IF given_back > 0 AND position('#' IN p_key) = 0 THEN
        p_key := p_key || '@' || given_back;
    END IF;

    IF p_cause = 'refund' THEN
        WITH undone AS (
            SELECT x.key AS currency,
                   sum(CASE WHEN t.cause = 'refund' THEN -(t.adjustments->>x.key)::bigint ELSE -(t.applied->>x.key)::bigint END) AS amount
            FROM balance_transactions t, jsonb_each_text(earlier.applied) AS x
            WHERE ((t.reverses = earlier.position
                    AND ((t.cause = 'refund' AND (t.position > last_given_back OR position('#' IN t.idempotency_key) > 0))
                         OR t.cause = 'expiry'))
                   -- what was given back and then expired
                   OR (t.cause = 'expiry' AND t.reverses IN (
                         SELECT g.position FROM balance_transactions g WHERE g.reverses = earlier.position AND g.cause = 'refund_reversal')))
              AND t.adjustments ? x.key
            GROUP BY x.key
        )
        -- The share, rounded up, in numeric: a grant of up to 10^12 times a payment's minor units
        -- overflows bigint.
        SELECT jsonb_object_agg(x.key, -(div(x.value::numeric * p_numerator + p_denominator - 1, p_denominator)::bigint - COALESCE(u.amount, 0)))
        INTO moved
        FROM jsonb_each_text(earlier.applied) AS x LEFT JOIN undone u ON u.currency = x.key
        WHERE x.value::bigint > 0 AND div(x.value::numeric * p_numerator + p_denominator - 1, p_denominator)::bigint > COALESCE(u.amount, 0);
    ELSE
        SELECT jsonb_object_agg(currency, amount) INTO moved
        FROM (
            SELECT x.key AS currency, sum(-x.value::bigint) AS amount
            FROM balance_transactions t, jsonb_each_text(t.applied) AS x
            WHERE t.reverses = earlier.position AND t.cause = 'refund' AND t.position > last_given_back
              AND position('#' IN t.idempotency_key) = 0
            GROUP BY x.key
        ) taken
        WHERE amount > 0;
        lot_expiry := earlier.expires_at;
    END IF;
    IF moved IS NULL THEN
        RETURN jsonb_build_object('outcome', 'nothing');
    END IF;
    RETURN sluice_adjust_balances(earlier.user_id, moved, p_cause, p_key, NULL, p_floor, p_reason, NULL, NULL,
        lot_expiry, earlier.position, p_cause_event_id);
END $$;

CALL sluice_allow_execute('sluice_reverse_balance_change(text, bigint, bigint, text, text, boolean, text, bigint)', 'sluice_worker');
