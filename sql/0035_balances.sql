-- SPDX-License-Identifier: Apache-2.0
-- In-app currency balances (docs/credits.md): a user's amount of each currency, and the ledger
-- of every change to it. Both are written only by sluice_adjust_balances (sql/functions), the
-- one place that applies adjustments: atomically across currencies, never below zero, at most
-- once per idempotency key.
CREATE TABLE IF NOT EXISTS balances (
    user_id     text        NOT NULL,
    currency    text        NOT NULL CHECK (currency ~ '^[a-z][a-z0-9_]{0,31}$'),
    amount      bigint      NOT NULL CHECK (amount >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, currency)
);

CREATE TABLE IF NOT EXISTS balance_transactions (
    -- the order of the ledger, and the history's cursor
    position         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- the id the API shows
    id               uuid        NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    user_id          text        NOT NULL,
    -- the Idempotency-Key of an API request, or the key of what caused a grant: a second change
    -- with the same key for the same user is not made
    idempotency_key  text        CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    -- SHA-256 of the request, so that a key reused with another request is refused
    request_digest   bytea,
    -- {"credits": -20}: what was asked
    adjustments      jsonb       NOT NULL,
    -- {"credits": -20}: what was done (less than asked where a take-back met the zero floor)
    applied          jsonb       NOT NULL,
    -- {"credits": 480}: the touched currencies' balances after it
    balances         jsonb       NOT NULL,
    -- {"credits": 5}: what a take-back could not take, the balance being too low
    shortfall        jsonb,
    cause            text        NOT NULL CHECK (cause IN ('api', 'operator', 'purchase', 'renewal', 'refund', 'refund_reversal', 'expiry')),
    reason           text        CHECK (length(reason) <= 500),
    metadata         jsonb,
    -- who made an operator's adjustment (`worker balance adjust --by`)
    actor            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS balance_transactions_user ON balance_transactions (user_id, position DESC);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT ON balances, balance_transactions TO sluice_ingest;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT SELECT ON balances, balance_transactions TO sluice_worker;
    END IF;
END $$;
