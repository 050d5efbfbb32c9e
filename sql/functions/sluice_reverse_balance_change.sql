-- SPDX-License-Identifier: Apache-2.0
-- Undoes a share of an earlier balance change, found by its idempotency key (docs/credits.md):
-- a refund takes back the grant of the purchase it refunds, a refund reversal gives back what
-- the refund took. Each currency of the earlier row's `applied` moves the other way by
-- p_numerator / p_denominator of it, rounded up (a refund of 1/3 of 500 credits takes 167),
-- through sluice_adjust_balances (p_floor: a take-back stops at zero and records the shortfall),
-- for the user the earlier change was made for, under p_key (once).
-- Returns sluice_adjust_balances' answer, or {"outcome": "nothing"} when there is no earlier
-- change (the purchase granted nothing) or its share rounds to nothing.
CREATE OR REPLACE FUNCTION sluice_reverse_balance_change(
    p_of_key text, p_numerator bigint, p_denominator bigint, p_cause text, p_key text, p_floor boolean, p_reason text
) RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    earlier balance_transactions;
    reversed jsonb;
BEGIN
    IF p_numerator <= 0 OR p_denominator <= 0 OR p_numerator > p_denominator THEN
        RAISE EXCEPTION 'a share must be a fraction from 0 to 1, not %/%', p_numerator, p_denominator;
    END IF;
    SELECT * INTO earlier FROM balance_transactions WHERE idempotency_key = p_of_key ORDER BY position LIMIT 1;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('outcome', 'nothing');
    END IF;
    SELECT jsonb_object_agg(key, -sign(value::bigint) * ((abs(value::bigint) * p_numerator + p_denominator - 1) / p_denominator))
    INTO reversed
    FROM jsonb_each_text(earlier.applied)
    WHERE value::bigint <> 0;
    IF reversed IS NULL THEN
        RETURN jsonb_build_object('outcome', 'nothing');
    END IF;
    RETURN sluice_adjust_balances(earlier.user_id, reversed, p_cause, p_key, NULL, p_floor, p_reason, NULL, NULL);
END $$;

REVOKE ALL ON FUNCTION sluice_reverse_balance_change(text, bigint, bigint, text, text, boolean, text) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_reverse_balance_change(text, bigint, bigint, text, text, boolean, text) TO sluice_worker;
    END IF;
END $$;
