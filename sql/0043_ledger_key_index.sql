-- SPDX-License-Identifier: Apache-2.0
-- One index for the ledger's keys instead of two: (idempotency_key, user_id) keeps a key once per
-- user, as UNIQUE (user_id, idempotency_key) did, and finds a grant by its key alone (a refund's
-- take-back, a consumption answer), as balance_transactions_key did. Every ledger row written
-- (a grant with each purchase) maintains one index fewer.
CREATE UNIQUE INDEX IF NOT EXISTS balance_transactions_keys ON balance_transactions (idempotency_key, user_id)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE balance_transactions DROP CONSTRAINT IF EXISTS balance_transactions_user_id_idempotency_key_key;
DROP INDEX IF EXISTS balance_transactions_key;
