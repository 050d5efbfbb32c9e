-- SPDX-License-Identifier: Apache-2.0
-- Expires what is left of the grants whose period ended (docs/credits.md), at most p_limit
-- grants a call, soonest due first: each grant's lots still holding credits are taken, under the
-- user's lock, through sluice_adjust_balances (cause expiry, p_reverses the grant, so exactly its
-- lots are emptied), once under the key `expiry:` + the grant's key. A user whose lock another
-- transaction holds (an apply, a spend, another sweep) is skipped, never waited for: the next
-- call takes it, and two sweeps never lock in opposite orders. Returns how many grants expired.
-- Called by the worker holding the balance-expiry lease (BalanceExpiryService).
CREATE OR REPLACE FUNCTION sluice_expire_balance_lots(p_limit integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    due record;
    taken jsonb;
    expired integer := 0;
BEGIN
    FOR due IN
        SELECT g.position, g.user_id, g.idempotency_key
        FROM (
            SELECT l.grant_position FROM balance_lots l
            WHERE l.expires_at <= now() AND l.remaining > 0
            GROUP BY l.grant_position
            ORDER BY min(l.expires_at), l.grant_position
            LIMIT p_limit
        ) d
        JOIN balance_transactions g ON g.position = d.grant_position
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(sluice_balance_lock(due.user_id));
        -- Read under the lock: what a spend committed meanwhile took is not there any more.
        SELECT jsonb_object_agg(currency, -remaining) INTO taken
        FROM balance_lots WHERE grant_position = due.position AND remaining > 0;
        CONTINUE WHEN taken IS NULL;
        PERFORM sluice_adjust_balances(due.user_id, taken, 'expiry', 'expiry:' || COALESCE(due.idempotency_key, due.position::text),
            NULL, true, NULL, NULL, NULL, NULL, due.position, NULL);
        -- Emptied already (the lots never hold more than the balance); said again, so that a lot
        -- can never be found due twice.
        UPDATE balance_lots SET remaining = 0 WHERE grant_position = due.position;
        expired := expired + 1;
    END LOOP;
    RETURN expired;
END $$;

CALL sluice_allow_execute('sluice_expire_balance_lots(integer)', 'sluice_worker');
