-- SPDX-License-Identifier: Apache-2.0
-- Grants that expire at the end of their period, and take-backs that add up (docs/credits.md).
--
-- * catalog_products.currency_grants_expire: a subscription product whose every period's grant
--   expires at that period's end (a one-time purchase's never does).
-- * balance_transactions.expires_at: when such a grant's unspent part expires.
-- * balance_transactions.reverses: the grant a take-back (refund), give-back (refund_reversal)
--   or expiry undoes, by its position. A second partial refund of one payment takes back only
--   what the first did not, counted from these rows (sluice_reverse_balance_change). Rows made
--   before are linked here by their keys (take_back:… and give_back:… name the grant:… row).
-- * balance_lots: what is left of each expiring grant, by currency. A balance only goes down
--   through sluice_adjust_balances, which takes the amount from the lots first (the grant being
--   undone first, then the soonest to expire), so the lots never hold more than the balance; at
--   expires_at the sweep (sluice_expire_balance_lots) takes what a lot still holds, cause expiry.
ALTER TABLE catalog_products ADD COLUMN IF NOT EXISTS currency_grants_expire boolean NOT NULL DEFAULT false;

ALTER TABLE balance_transactions ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE balance_transactions ADD COLUMN IF NOT EXISTS reverses bigint;
CREATE INDEX IF NOT EXISTS balance_transactions_reverses ON balance_transactions (reverses) WHERE reverses IS NOT NULL;
UPDATE balance_transactions t SET reverses = g.position
FROM balance_transactions g
WHERE t.reverses IS NULL AND t.cause IN ('refund', 'refund_reversal') AND t.idempotency_key ~ '^(take_back|give_back):'
  AND g.user_id = t.user_id AND g.idempotency_key = 'grant:' || substring(t.idempotency_key FROM position(':' IN t.idempotency_key) + 1);

CREATE TABLE IF NOT EXISTS balance_lots (
    grant_position bigint      NOT NULL REFERENCES balance_transactions (position),
    user_id        text        NOT NULL,
    currency       text        NOT NULL,
    remaining      bigint      NOT NULL CHECK (remaining >= 0),
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (grant_position, currency)
);
CREATE INDEX IF NOT EXISTS balance_lots_held ON balance_lots (user_id, currency, expires_at) WHERE remaining > 0;
CREATE INDEX IF NOT EXISTS balance_lots_due ON balance_lots (expires_at) WHERE remaining > 0;

-- The functions' signatures grow (sql/functions); the old ones would make calls ambiguous.
DROP FUNCTION IF EXISTS sluice_adjust_balances(text, jsonb, text, text, bytea, boolean, text, jsonb, text);
DROP FUNCTION IF EXISTS sluice_reverse_balance_change(text, bigint, bigint, text, text, boolean, text);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT ON balance_lots TO sluice_ingest;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT SELECT ON balance_lots TO sluice_worker;
    END IF;
END $$;
