-- SPDX-License-Identifier: Apache-2.0
-- Recovery and reconciliation (docs/recovery.md).

-- How an event reached the queue: by webhook (the default), fetched from the provider's API by
-- recovery (Stripe events carry no signature there), or made by reconciliation from the
-- provider's current answer (an Apple subscription status, a Stripe subscription).
ALTER TABLE events ADD COLUMN origin text NOT NULL DEFAULT 'webhook'
    CHECK (origin IN ('webhook', 'recovery', 'reconciliation'));

-- One row per recovery stream ('apple:production:failures', 'stripe', …): everything before
-- `checkpoint` was fetched and stored. A stream is worked by one worker at a time, the one whose
-- lease runs (a worker killed mid-window leaves its lease to run out and its checkpoint where it
-- was, so the next run fetches the window again and stores nothing twice).
CREATE TABLE recovery_checkpoints (
    stream           text        PRIMARY KEY,
    checkpoint       timestamptz NOT NULL,
    leased_by        text,
    leased_until     timestamptz,
    last_success_at  timestamptz,
    last_error       text,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- When reconciliation last asked the provider about an entitlement: one is asked again only after
-- RECONCILE_RECHECK_SECONDS, whatever the provider answered (or failed to).
ALTER TABLE entitlements ADD COLUMN reconciled_at timestamptz;
