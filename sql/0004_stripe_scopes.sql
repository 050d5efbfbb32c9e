-- SPDX-License-Identifier: Apache-2.0
-- Stripe as Stripe really sends it (docs/stripe.md).
--
-- Links are kept per scope: a Connect account's ids and test-mode ids never resolve to the
-- platform's live state. The scope is '' for the platform's live objects, 'test:' for its test
-- mode, 'acct_…:' and 'acct_…:test:' for a connected account (the same prefix its entity keys carry).
ALTER TABLE provider_links ADD COLUMN scope text NOT NULL DEFAULT '';
UPDATE provider_links SET scope = account || ':' WHERE account IS NOT NULL;
ALTER TABLE provider_links DROP CONSTRAINT provider_links_pkey;
ALTER TABLE provider_links ADD PRIMARY KEY (kind, scope, external_id);

-- What was refunded of a payment, in minor units (cumulative, as Stripe's `amount_refunded`);
-- a partial refund leaves the status as it was and is recorded here.
ALTER TABLE transactions ADD COLUMN amount_refunded bigint;
-- The end of the period a subscription payment paid for: a refund or dispute of a payment whose
-- period ended before the entitlement's current one does not revoke the current period.
ALTER TABLE transactions ADD COLUMN period_end timestamptz;
