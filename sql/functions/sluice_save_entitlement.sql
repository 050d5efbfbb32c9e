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
CREATE OR REPLACE FUNCTION sluice_save_entitlement(
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

-- Least privilege: only the worker (and the owner) may call it.
REVOKE ALL ON FUNCTION sluice_save_entitlement(text, text, text, text, text, text, text, text, timestamptz, timestamptz, boolean, boolean, timestamptz, timestamptz, timestamptz, text, text, text, text, timestamptz, text, text, timestamptz, timestamptz, boolean) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_save_entitlement(text, text, text, text, text, text, text, text, timestamptz, timestamptz, boolean, boolean, timestamptz, timestamptz, timestamptz, text, text, text, text, timestamptz, text, text, timestamptz, timestamptz, boolean) TO sluice_worker;
    END IF;
END $$;
