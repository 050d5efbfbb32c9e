-- SPDX-License-Identifier: Apache-2.0
-- Web checkouts (docs/checkout.md): what `POST /v1/iap/payment-intents` started at Stripe, one
-- row a pending transaction. Ingest writes these rows; they grant nothing. Access still comes only
-- from the proven Stripe events the worker applies: a checkout's status is read from the
-- transactions and entitlements those events wrote, and only the row's own lifecycle
-- (superseded, expired) lives here.

-- The user's Stripe Customer, per environment: made once, then reused (Stripe's customer search
-- lags by up to a minute, so Sluice keeps its own link).
CREATE TABLE IF NOT EXISTS stripe_customers (
    user_id      text        NOT NULL,
    environment  text        NOT NULL CHECK (environment IN ('production', 'sandbox')),
    customer_id  text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, environment)
);

CREATE TABLE IF NOT EXISTS checkouts (
    -- the transaction_id the app is given; every Idempotency-Key of its Stripe calls derives from it
    id                uuid        PRIMARY KEY,
    user_id           text        NOT NULL,
    product_id        text        NOT NULL,
    environment       text        NOT NULL CHECK (environment IN ('production', 'sandbox')),
    -- what the app confirms: a PaymentIntent, a Subscription's first invoice, a trial's SetupIntent, or a hosted page
    kind              text        NOT NULL CHECK (kind IN ('payment', 'subscription', 'trial', 'hosted')),
    -- the price and trial the checkout was made with (CheckoutTerms): a change makes a new checkout
    terms             text        NOT NULL,
    -- open: the user's slot for this product; released: a new checkout may be made beside it
    -- (the payment is processing, or it ended); superseded: failed by a newer checkout; expired:
    -- nobody confirmed it within its window, and the worker cancelled it at Stripe
    state             text        NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'released', 'superseded', 'expired')),
    -- who is making the Stripe objects until when: another request takes over a claim that ran out
    -- (its calls repeat the same Idempotency-Keys, so Stripe answers the first objects again)
    claimed_until     timestamptz,
    stripe_customer   text,
    payment_intent    text,
    subscription      text,
    invoice           text,
    setup_intent      text,
    checkout_session  text,
    client_secret     text,
    checkout_url      text,
    -- the user's subscription (Stripe id) granting an access level this one grants too: cancelled
    -- with proration by the worker once this checkout is paid (replacement_settled_at)
    replaces_subscription text,
    -- when the worker settled the replacement: cancelled the old one, or found this one failed
    replacement_settled_at timestamptz,
    -- when the worker cancels it at Stripe if nobody confirmed it (CHECKOUT_WINDOW_SECONDS)
    expires_at        timestamptz NOT NULL,
    -- when the worker's sweep dealt with it: cancelled its Stripe objects, or found its payment under way
    cancelled_at      timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
-- The single flight: one open checkout per user, product and environment, whichever ingest takes it.
CREATE UNIQUE INDEX IF NOT EXISTS checkouts_open ON checkouts (user_id, product_id, environment) WHERE state = 'open';
-- The worker's sweep: open checkouts past their window, and replaced ones still to cancel at Stripe.
CREATE INDEX IF NOT EXISTS checkouts_to_cancel ON checkouts (expires_at) WHERE cancelled_at IS NULL AND state IN ('open', 'superseded', 'expired');

-- The worker's replacement pass: subscriptions to cancel once their replacement is paid.
CREATE INDEX IF NOT EXISTS checkouts_replacing ON checkouts (created_at) WHERE replaces_subscription IS NOT NULL AND replacement_settled_at IS NULL;

-- A user's recent checkouts, for the trigger of sql/functions/sluice_notify_user_changed.sql.
CREATE INDEX IF NOT EXISTS checkouts_user ON checkouts (user_id, created_at);

-- notify_user_changed and its triggers on transactions and entitlements: now in sql/functions/,
-- re-applied by every `worker migrate` (the current body of a function is in one file; a
-- migration changes only the schema).

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT, INSERT ON stripe_customers TO sluice_ingest;
        GRANT SELECT, INSERT, UPDATE ON checkouts TO sluice_ingest;
        -- a checkout's status follows the transaction its Stripe ids are linked to
        GRANT SELECT ON provider_links TO sluice_ingest;
    END IF;
END $$;
