-- SPDX-License-Identifier: Apache-2.0
-- The upsert of a transaction (StateStore.save), as sluice_save_entitlement's: returns the saved
-- row's id and the row as it was before (NULL when new).
-- Also records the status in transaction_status_history when it differs from the last recorded.
CREATE OR REPLACE FUNCTION sluice_save_transaction(
    p_source text, p_environment text, p_provider_transaction_id text, p_entitlement_key text, p_user_id text,
    p_product_id text, p_product_type text, p_status text, p_amount bigint, p_currency text, p_purchased_at timestamptz,
    p_refunded_at timestamptz, p_amount_refunded bigint, p_period_end timestamptz, p_last_event_time timestamptz,
    p_event_id bigint
) RETURNS TABLE (saved_id uuid, previous transactions) LANGUAGE plpgsql AS $$
BEGIN
    SELECT t.* INTO previous FROM transactions t
    WHERE t.source = p_source AND t.environment = p_environment AND t.provider_transaction_id = p_provider_transaction_id;
    INSERT INTO transactions (source, environment, provider_transaction_id, entitlement_key, user_id, product_id,
        product_type, status, amount, currency, purchased_at, refunded_at, amount_refunded, period_end, last_event_time)
    VALUES (p_source, p_environment, p_provider_transaction_id, p_entitlement_key, p_user_id, p_product_id,
        p_product_type, p_status, p_amount, p_currency, p_purchased_at, p_refunded_at, p_amount_refunded, p_period_end,
        p_last_event_time)
    ON CONFLICT (source, environment, provider_transaction_id) DO UPDATE SET
        entitlement_key = EXCLUDED.entitlement_key, user_id = EXCLUDED.user_id, product_id = EXCLUDED.product_id,
        product_type = EXCLUDED.product_type, status = EXCLUDED.status, amount = EXCLUDED.amount,
        currency = EXCLUDED.currency, purchased_at = EXCLUDED.purchased_at, refunded_at = EXCLUDED.refunded_at,
        amount_refunded = EXCLUDED.amount_refunded, period_end = EXCLUDED.period_end,
        last_event_time = EXCLUDED.last_event_time, updated_at = now()
    RETURNING id INTO saved_id;
    INSERT INTO transaction_status_history (transaction_id, status, event_id)
    SELECT saved_id, p_status, p_event_id
    WHERE p_status IS DISTINCT FROM (
        SELECT h.status FROM transaction_status_history h WHERE h.transaction_id = saved_id ORDER BY h.id DESC LIMIT 1);
    RETURN NEXT;
END $$;

-- Least privilege: only the worker (and the owner) may call it.
REVOKE ALL ON FUNCTION sluice_save_transaction(text, text, text, text, text, text, text, text, bigint, text, timestamptz, timestamptz, bigint, timestamptz, timestamptz, bigint) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_save_transaction(text, text, text, text, text, text, text, text, bigint, text, timestamptz, timestamptz, bigint, timestamptz, timestamptz, bigint) TO sluice_worker;
    END IF;
END $$;
