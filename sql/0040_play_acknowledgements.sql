-- SPDX-License-Identifier: Apache-2.0
-- Google Play refunds a purchase nobody acknowledged within three days. Every purchase the worker
-- applies while Google reports it unacknowledged is recorded here, in the apply transaction, and
-- acknowledged by PlayAcknowledger (under the play-acknowledge lease), retried until Google takes it.
CREATE TABLE IF NOT EXISTS play_acknowledgements (
    purchase_token   text        PRIMARY KEY,
    package_name     text        NOT NULL,
    product_kind     text        NOT NULL CHECK (product_kind IN ('subscription', 'product')),
    product_id       text        NOT NULL,
    environment      text        NOT NULL CHECK (environment IN ('production', 'sandbox')),
    entitlement_key  text,
    -- when the purchase was made: Google's three days run from it
    purchased_at     timestamptz NOT NULL,
    acknowledged_at  timestamptz,
    -- Google refused the acknowledgement and the purchase is no longer one to acknowledge
    -- (refunded, expired, canceled while pending): nothing more is tried
    given_up_at      timestamptz,
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS play_acknowledgements_due ON play_acknowledgements (next_attempt_at)
    WHERE acknowledged_at IS NULL AND given_up_at IS NULL;
