-- SPDX-License-Identifier: Apache-2.0
-- Domain state: what the worker makes of the raw events (TRANSITIONS.md).

-- A user's access to a product. One row per entity: a Stripe subscription, a Stripe one-time
-- payment, or an Apple originalTransactionId. user_id is NULL while an Apple purchase is known
-- only by its originalTransactionId.
CREATE TABLE entitlements (
    id                       uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- 'stripe:subscription:sub_…', 'stripe:payment:pi_…', 'apple:2000000…' (originalTransactionId)
    entity_key               text        NOT NULL UNIQUE,
    user_id                  text,
    email                    text,
    product_id               text        NOT NULL,
    product_type             text        NOT NULL
                             CHECK (product_type IN ('consumable', 'non_consumable', 'auto_renewable', 'non_renewing')),
    source                   text        NOT NULL CHECK (source IN ('web_checkout', 'store_kit')),
    status                   text        NOT NULL
                             CHECK (status IN ('active', 'trialing', 'grace_period', 'past_due', 'paused', 'cancelled',
                                               'expired', 'revoked', 'refunded')),
    expires_at               timestamptz,
    purchased_at             timestamptz,
    will_renew               boolean,
    is_trial                 boolean     NOT NULL DEFAULT false,
    trial_ends_at            timestamptz,
    cancelled_at             timestamptz,
    grace_period_expires_at  timestamptz,
    -- the product a renewal switches to (Apple DID_CHANGE_RENEWAL_PREF)
    pending_product_id       text,
    -- the last offer redeemed (Apple OFFER_REDEEMED)
    offer                    text,
    -- the provider time of the newest event applied to this row; older events change nothing
    last_event_time          timestamptz,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entitlements_user ON entitlements (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX entitlements_email ON entitlements (lower(email)) WHERE email IS NOT NULL;

-- The ledger: one row per payment (purchase, renewal, proration); refunds and disputes move its status.
CREATE TABLE transactions (
    id                       uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    source                   text        NOT NULL CHECK (source IN ('web_checkout', 'store_kit')),
    -- PaymentIntent / Checkout Session / invoice / SetupIntent id, or Apple transactionId
    provider_transaction_id  text        NOT NULL,
    entitlement_key          text,
    user_id                  text,
    product_id               text,
    product_type             text,
    status                   text        NOT NULL
                             CHECK (status IN ('pending', 'processing', 'succeeded', 'failed', 'refunded', 'disputed')),
    amount                   bigint,
    currency                 text,
    purchased_at             timestamptz,
    refunded_at              timestamptz,
    last_event_time          timestamptz,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT transactions_provider_id UNIQUE (source, provider_transaction_id)
);
-- The transaction history of a user, newest first (StateReader.transactions).
CREATE INDEX transactions_user ON transactions (user_id, (COALESCE(purchased_at, created_at)) DESC) WHERE user_id IS NOT NULL;
CREATE INDEX transactions_entitlement ON transactions (entitlement_key);

-- Every status a transaction took, and the event that moved it.
CREATE TABLE transaction_status_history (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id  uuid        NOT NULL REFERENCES transactions (id),
    status          text        NOT NULL,
    event_id        bigint,
    changed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transaction_status_history_transaction ON transaction_status_history (transaction_id, id);

-- What a provider id points at: the user, the entitlement, the transaction.
--   stripe_customer, stripe_subscription, stripe_payment_intent, stripe_charge, stripe_checkout_session,
--   stripe_setup_intent, stripe_invoice, apple_original_transaction
CREATE TABLE provider_links (
    kind             text        NOT NULL,
    external_id      text        NOT NULL,
    user_id          text,
    entitlement_key  text,
    transaction_key  text,
    -- the Stripe Connect account the id belongs to, if any
    account          text,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, external_id)
);
CREATE INDEX provider_links_account ON provider_links (account) WHERE account IS NOT NULL;

-- One row per event the worker finished: applied, stale (older than the state), or recorded only.
CREATE TABLE applied_events (
    event_id    bigint      PRIMARY KEY,
    entity_key  text,
    outcome     text        NOT NULL CHECK (outcome IN ('applied', 'stale', 'recorded')),
    detail      text,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
