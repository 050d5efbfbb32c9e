-- SPDX-License-Identifier: Apache-2.0
-- Currencies granted by catalog products (docs/credits.md): a purchase of the product grants
-- currency_grants ({"credits": 500}); a subscription's every paid period does, and its free
-- trial trial_currency_grants when set (else the same). Granted by the worker in the transaction
-- that applies the purchase, keyed by the provider's transaction, through sluice_adjust_balances.
ALTER TABLE catalog_products ADD COLUMN IF NOT EXISTS currency_grants jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(currency_grants) = 'object');
ALTER TABLE catalog_products ADD COLUMN IF NOT EXISTS trial_currency_grants jsonb
    CHECK (trial_currency_grants IS NULL OR jsonb_typeof(trial_currency_grants) = 'object');

-- A refund finds the grant it takes back by the grant's key, whoever holds it now.
CREATE INDEX IF NOT EXISTS balance_transactions_key ON balance_transactions (idempotency_key) WHERE idempotency_key IS NOT NULL;
