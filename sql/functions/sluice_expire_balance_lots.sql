-- SPDX-License-Identifier: Apache-2.0
-- Expires what is left of the grants whose period ended (docs/credits.md), at most p_limit
-- grants a call, oldest first: each grant's lots still holding credits are taken, under the
-- user's lock, through sluice_adjust_balances (cause expiry, p_reverses the grant, so exactly its
-- lots are emptied), once under the key `expiry:` + the grant's key. Returns how many grants
-- expired. Called by the worker holding the balance-expiry lease (BalanceExpiryService); two
-- calls at once skip each other's grants.
CREATE OR REPLACE FUNCTION sluice_expire_balance_lots(p_limit integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    due record;
    taken jsonb;
    expired integer := 0;
BEGIN
    FOR due IN
        SELECT g.position, g.user_id, g.idempotency_key
        FROM balance_transactions g
        WHERE g.position IN (
            SELECT l.grant_position FROM balance_lots l
            WHERE l.expires_at <= now() AND l.remaining > 0
            ORDER BY l.expires_at, l.grant_position
            LIMIT p_limit
        )
        ORDER BY g.position
        FOR UPDATE OF g SKIP LOCKED
    LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('sluice_balance:' || due.user_id, 0));
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

REVOKE ALL ON FUNCTION sluice_expire_balance_lots(integer) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_expire_balance_lots(integer) TO sluice_worker;
    END IF;
END $$;
