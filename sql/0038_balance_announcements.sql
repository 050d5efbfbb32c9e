-- SPDX-License-Identifier: Apache-2.0
-- Every balance change is announced as balance.changed, in ledger order per user, by the worker
-- holding the balance-announce lease (docs/webhooks.md): the ledger is its own outbox. A row is
-- announced once (announced_at); cause_event_id names the provider event a grant or take-back
-- came from (NULL for the API and operators). Rows made before this were never announced and
-- are not now.
ALTER TABLE balance_transactions ADD COLUMN IF NOT EXISTS announced_at timestamptz;
ALTER TABLE balance_transactions ADD COLUMN IF NOT EXISTS cause_event_id bigint;
UPDATE balance_transactions SET announced_at = created_at WHERE announced_at IS NULL;
CREATE INDEX IF NOT EXISTS balance_transactions_unannounced ON balance_transactions (position) WHERE announced_at IS NULL;
