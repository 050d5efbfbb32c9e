-- SPDX-License-Identifier: Apache-2.0
-- The upserts of an entitlement and of a transaction (StateStore.save), as functions: each
-- returns the saved row's id and the row as it was before (NULL when new), which the caller
-- expands with `(previous).*`, so the columns keep the table's names.
--
-- Why functions: sent as one statement with CTEs, each upsert was planned again for every applied
-- event (0.16 ms and 0.23 ms of planning against 0.16 ms and 0.25 ms of execution,
-- pg_stat_statements with track_planning, ApplyBenchmark mixed). PL/pgSQL keeps its statements'
-- plans for the life of the server connection, behind PgBouncer in transaction mode too.
-- The caller holds the entity's advisory lock, so nothing changes the row between the read of
-- `previous` and the upsert.
CREATE FUNCTION sluice_save_entitlement(
    p_entity_key text, p_user_id text, p_email text, p_product_id text, p_product_type text, p_source text,
    p_environment text, p_status text, p_expires_at timestamptz, p_purchased_at timestamptz, p_will_renew boolean,
    p_is_trial boolean, p_trial_ends_at timestamptz, p_cancelled_at timestamptz, p_grace_period_expires_at timestamptz,
    p_pending_product_id text, p_offer text, p_offer_type text, p_expiration_reason text,
    p_billing_issue_detected_at timestamptz, p_ownership text, p_price_increase_status text,
    p_renewal_info_signed_at timestamptz, p_last_event_time timestamptz, p_announced_active boolean
) RETURNS TABLE (saved_id uuid, previous entitlements) LANGUAGE plpgsql AS $$
BEGIN
    SELECT e.* INTO previous FROM entitlements e WHERE e.entity_key = p_entity_key;
    INSERT INTO entitlements (entity_key, user_id, email, product_id, product_type, source, environment, status,
        expires_at, purchased_at, will_renew, is_trial, trial_ends_at, cancelled_at, grace_period_expires_at,
        pending_product_id, offer, offer_type, expiration_reason, billing_issue_detected_at, ownership,
        price_increase_status, renewal_info_signed_at, last_event_time, announced_active)
    VALUES (p_entity_key, p_user_id, p_email, p_product_id, p_product_type, p_source, p_environment, p_status,
        p_expires_at, p_purchased_at, p_will_renew, p_is_trial, p_trial_ends_at, p_cancelled_at, p_grace_period_expires_at,
        p_pending_product_id, p_offer, p_offer_type, p_expiration_reason, p_billing_issue_detected_at, p_ownership,
        p_price_increase_status, p_renewal_info_signed_at, p_last_event_time, p_announced_active)
    ON CONFLICT (entity_key) DO UPDATE SET
        user_id = EXCLUDED.user_id, email = EXCLUDED.email, product_id = EXCLUDED.product_id,
        product_type = EXCLUDED.product_type, status = EXCLUDED.status, expires_at = EXCLUDED.expires_at,
        purchased_at = EXCLUDED.purchased_at, will_renew = EXCLUDED.will_renew, is_trial = EXCLUDED.is_trial,
        trial_ends_at = EXCLUDED.trial_ends_at, cancelled_at = EXCLUDED.cancelled_at,
        grace_period_expires_at = EXCLUDED.grace_period_expires_at,
        pending_product_id = EXCLUDED.pending_product_id, offer = EXCLUDED.offer, offer_type = EXCLUDED.offer_type,
        expiration_reason = EXCLUDED.expiration_reason, billing_issue_detected_at = EXCLUDED.billing_issue_detected_at,
        ownership = EXCLUDED.ownership, price_increase_status = EXCLUDED.price_increase_status,
        renewal_info_signed_at = EXCLUDED.renewal_info_signed_at,
        last_event_time = EXCLUDED.last_event_time, announced_active = EXCLUDED.announced_active, updated_at = now()
    RETURNING id INTO saved_id;
    RETURN NEXT;
END $$;

-- Also records the status in transaction_status_history when it differs from the last recorded.
CREATE FUNCTION sluice_save_transaction(
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

-- Least privilege: only the worker (and the owner) may call them.
REVOKE ALL ON FUNCTION sluice_save_entitlement FROM PUBLIC;
REVOKE ALL ON FUNCTION sluice_save_transaction FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_save_entitlement TO sluice_worker;
        GRANT EXECUTE ON FUNCTION sluice_save_transaction TO sluice_worker;
    END IF;
END $$;
