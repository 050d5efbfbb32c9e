-- SPDX-License-Identifier: Apache-2.0
-- Entitlements an app can gate on (docs/entitlements.md).
--
-- Every transaction and entitlement says whose money it is: 'production', or 'sandbox' (Apple
-- Sandbox / TestFlight, Stripe test mode). State of one environment never changes the other's:
-- Apple Sandbox entity keys are 'apple:sandbox:<originalTransactionId>' and their links have the
-- scope 'sandbox:' (Stripe test-mode keys already carry 'test:'), and the ledger keeps each
-- environment's provider ids apart.
ALTER TABLE entitlements ADD COLUMN environment text NOT NULL DEFAULT 'production'
    CHECK (environment IN ('production', 'sandbox'));
ALTER TABLE transactions ADD COLUMN environment text NOT NULL DEFAULT 'production'
    CHECK (environment IN ('production', 'sandbox'));

-- Existing rows, from what was recorded. Stripe: test-mode keys and links carry 'test:'.
UPDATE entitlements SET environment = 'sandbox' WHERE entity_key ~ '^stripe:(acct_[^:]+:)?test:';
UPDATE transactions SET environment = 'sandbox' WHERE entitlement_key ~ '^stripe:(acct_[^:]+:)?test:';
UPDATE transactions t SET environment = 'sandbox'
FROM (SELECT DISTINCT transaction_key FROM provider_links WHERE scope LIKE '%test:' AND transaction_key IS NOT NULL) l
WHERE t.source = 'web_checkout' AND t.environment = 'production' AND t.provider_transaction_id = l.transaction_key;

-- Apple: the environment every stored notification and sync recorded for its originalTransactionId.
CREATE TEMPORARY TABLE apple_sandbox_ids ON COMMIT DROP AS
    SELECT DISTINCT ordering_key AS id FROM events
    WHERE source IN ('apple', 'storekit') AND environment = 'Sandbox' AND ordering_key IS NOT NULL;
UPDATE entitlements e SET environment = 'sandbox', entity_key = 'apple:sandbox:' || s.id
FROM apple_sandbox_ids s WHERE e.entity_key = 'apple:' || s.id;
UPDATE transactions t SET environment = 'sandbox', entitlement_key = 'apple:sandbox:' || s.id
FROM apple_sandbox_ids s WHERE t.entitlement_key = 'apple:' || s.id;
UPDATE provider_links l SET scope = 'sandbox:', entitlement_key = 'apple:sandbox:' || s.id
FROM apple_sandbox_ids s WHERE l.kind = 'apple_original_transaction' AND l.external_id = s.id AND l.scope = '';
UPDATE applied_events a SET entity_key = 'apple:sandbox:' || s.id
FROM apple_sandbox_ids s WHERE a.entity_key = 'apple:' || s.id;

ALTER TABLE transactions DROP CONSTRAINT transactions_provider_id;
ALTER TABLE transactions ADD CONSTRAINT transactions_provider_id UNIQUE (source, environment, provider_transaction_id);

-- What Sluice knows of a subscription beyond its status (the read API shows each).
ALTER TABLE entitlements
    -- introductory | promotional | offer_code | win_back, with `offer` (the offer's identifier)
    ADD COLUMN offer_type text,
    -- voluntary | billing_error | price_increase | product_unavailable | disputed | other
    ADD COLUMN expiration_reason text,
    -- when a failed renewal payment was first reported still being retried; cleared once paid
    ADD COLUMN billing_issue_detected_at timestamptz,
    -- purchased | family_shared
    ADD COLUMN ownership text,
    -- pending | accepted (an Apple price increase)
    ADD COLUMN price_increase_status text,
    -- the signedDate of the renewal info the renewal fields came from: older renewal info changes nothing
    ADD COLUMN renewal_info_signed_at timestamptz;

-- The history's index for its cursor is built by 0009, concurrently: transactions is a large table.
