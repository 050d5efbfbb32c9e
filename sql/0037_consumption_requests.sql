-- SPDX-License-Identifier: Apache-2.0
-- Apple's CONSUMPTION_REQUEST notifications (docs/credits.md, "Refund requests"): one row per
-- notification applied, written in the transaction that applies it. With CONSUMPTION_RESPONSE=on
-- the worker answers each with Send Consumption Information (v2) within Apple's 12 hours,
-- retried on Apple's failures; the body sent is kept.
CREATE TABLE IF NOT EXISTS consumption_requests (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- the notification applied: one row each, however often it is applied
    event_id         bigint      NOT NULL UNIQUE,
    transaction_id   text        NOT NULL,
    environment      text        NOT NULL CHECK (environment IN ('production', 'sandbox')),
    bundle_id        text        NOT NULL,
    entitlement_key  text,
    -- UNINTENDED_PURCHASE, FULFILLMENT_ISSUE, … as Apple gives it
    reason           text,
    -- the notification's signedDate: Apple waits 12 hours from it
    requested_at     timestamptz NOT NULL,
    state            text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed', 'expired')),
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- what was sent (or last tried), as Apple's ConsumptionRequest
    body             jsonb,
    last_error       text,
    sent_at          timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS consumption_requests_due ON consumption_requests (next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS consumption_requests_entitlement ON consumption_requests (entitlement_key);
