-- SPDX-License-Identifier: Apache-2.0
-- Every entitlement and transaction save applying events makes (StateStore.save, HeldStateWrite),
-- held and sent with the events' records and announcements in one statement through
-- sluice_write_batch: a lone event's saves as a batch's.
--
-- The worker knows each row's state before and its id when it holds a save (loaded under its
-- lock, read `FOR UPDATE`, or saved earlier; a new row's id is chosen by the worker). Nothing
-- reads the rows between the held saves and this call: the store sends what it holds before any
-- statement of its own.
--
-- Each table is written once: the last held state of each row (DISTINCT ON … ORDER BY n DESC),
-- as the saves one after another would leave it, in key order. The status history gets one row
-- per held save whose status differs from the one before it — the previous held save of the same
-- transaction, else the last recorded — in the order held, as the saves one after another would
-- record it.

CREATE OR REPLACE FUNCTION sluice_save_held_states(p_states jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF jsonb_array_length(p_states->'entitlements') > 0 THEN
        INSERT INTO entitlements (id, entity_key, user_id, email, product_id, product_type, source, environment, status,
            expires_at, purchased_at, will_renew, is_trial, trial_ends_at, cancelled_at, grace_period_expires_at,
            pending_product_id, offer, offer_type, expiration_reason, billing_issue_detected_at, ownership,
            price_increase_status, renewal_info_signed_at, last_event_time, announced_active)
        SELECT DISTINCT ON (x.entity_key) x.id, x.entity_key, x.user_id, x.email, x.product_id, x.product_type, x.source,
            x.environment, x.status, sluice_timestamp_us(x.expires_at_us), sluice_timestamp_us(x.purchased_at_us),
            x.will_renew, x.is_trial, sluice_timestamp_us(x.trial_ends_at_us), sluice_timestamp_us(x.cancelled_at_us),
            sluice_timestamp_us(x.grace_period_expires_at_us), x.pending_product_id, x.offer, x.offer_type,
            x.expiration_reason, sluice_timestamp_us(x.billing_issue_detected_at_us), x.ownership,
            x.price_increase_status, sluice_timestamp_us(x.renewal_info_signed_at_us),
            sluice_timestamp_us(x.last_event_time_us), x.announced_active
        FROM jsonb_to_recordset(p_states->'entitlements') AS x(
            n int, id uuid, entity_key text, user_id text, email text, product_id text, product_type text, source text,
            environment text, status text, expires_at_us bigint, purchased_at_us bigint, will_renew boolean,
            is_trial boolean, trial_ends_at_us bigint, cancelled_at_us bigint, grace_period_expires_at_us bigint,
            pending_product_id text, offer text, offer_type text, expiration_reason text,
            billing_issue_detected_at_us bigint, ownership text, price_increase_status text,
            renewal_info_signed_at_us bigint, last_event_time_us bigint, announced_active boolean)
        ORDER BY x.entity_key, x.n DESC
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
            last_event_time = EXCLUDED.last_event_time, announced_active = EXCLUDED.announced_active, updated_at = now();
    END IF;

    IF jsonb_array_length(p_states->'transactions') > 0 THEN
        INSERT INTO transactions (id, source, environment, provider_transaction_id, entitlement_key, user_id, product_id,
            product_type, status, amount, currency, purchased_at, refunded_at, amount_refunded, period_end, last_event_time, quantity,
            quantity_refunded, is_trial)
        SELECT DISTINCT ON (x.source, x.environment, x.provider_transaction_id) x.id, x.source, x.environment,
            x.provider_transaction_id, x.entitlement_key, x.user_id, x.product_id, x.product_type, x.status, x.amount,
            x.currency, sluice_timestamp_us(x.purchased_at_us), sluice_timestamp_us(x.refunded_at_us), x.amount_refunded,
            sluice_timestamp_us(x.period_end_us), sluice_timestamp_us(x.last_event_time_us), x.quantity, x.quantity_refunded,
            -- A worker older than 0049 sends no is_trial: its rows get the reading of before
            -- (a subscription's period of no amount), as 0050 gave the rows written before.
            COALESCE(x.is_trial, x.amount = 0 AND (x.product_type IS NULL OR x.product_type = 'auto_renewable'), false)
        FROM jsonb_to_recordset(p_states->'transactions') AS x(
            n int, id uuid, source text, environment text, provider_transaction_id text, entitlement_key text,
            user_id text, product_id text, product_type text, status text, amount bigint, currency text,
            purchased_at_us bigint, refunded_at_us bigint, amount_refunded bigint, period_end_us bigint,
            last_event_time_us bigint, quantity integer, quantity_refunded integer, is_trial boolean)
        ORDER BY x.source, x.environment, x.provider_transaction_id, x.n DESC
        ON CONFLICT (source, environment, provider_transaction_id) DO UPDATE SET
            entitlement_key = EXCLUDED.entitlement_key, user_id = EXCLUDED.user_id, product_id = EXCLUDED.product_id,
            product_type = EXCLUDED.product_type, status = EXCLUDED.status, amount = EXCLUDED.amount,
            currency = EXCLUDED.currency, purchased_at = EXCLUDED.purchased_at, refunded_at = EXCLUDED.refunded_at,
            amount_refunded = EXCLUDED.amount_refunded, period_end = EXCLUDED.period_end,
            last_event_time = EXCLUDED.last_event_time, quantity = EXCLUDED.quantity,
            quantity_refunded = EXCLUDED.quantity_refunded, is_trial = EXCLUDED.is_trial, updated_at = now();

        INSERT INTO transaction_status_history (transaction_id, status, event_id)
        SELECT held.id, held.status, held.event_id
        FROM (
            SELECT x.n, x.id, x.status, x.event_id, lag(x.status) OVER (PARTITION BY x.id ORDER BY x.n) AS held_before
            FROM jsonb_to_recordset(p_states->'transactions') AS x(n int, id uuid, status text, event_id bigint)
        ) held
        WHERE held.status IS DISTINCT FROM COALESCE(held.held_before, (
            SELECT h.status FROM transaction_status_history h WHERE h.transaction_id = held.id ORDER BY h.id DESC LIMIT 1))
        ORDER BY held.n;
    END IF;
END $$;

-- Least privilege: only the worker (and the owner) may call it.
CALL sluice_allow_execute('sluice_save_held_states(jsonb)', 'sluice_worker');
