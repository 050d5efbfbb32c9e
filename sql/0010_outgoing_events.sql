-- SPDX-License-Identifier: Apache-2.0
-- Outgoing events and the endpoints that receive them (docs/webhooks.md).
--
-- Applying anything that changes an entitlement or a transaction writes one outgoing event in the
-- same transaction, and one delivery per endpoint whose filters match it. Endpoints are rows, so
-- operators change them at run time (`worker endpoints …`); FORWARD_TARGETS become endpoints
-- that receive Apple's notifications byte for byte (`raw_apple`).

CREATE TABLE endpoints (
    id                     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url                    text        NOT NULL,
    description            text,
    -- Standard Webhooks secret 'whsec_<base64>'; NULL only for a FORWARD_TARGETS endpoint without FORWARD_SECRET
    secret                 text,
    -- the secret before the last rotation, still signing until previous_secret_expires_at
    previous_secret        text,
    previous_secret_expires_at timestamptz,
    -- type patterns ('entitlement.*', 'transaction.refunded'); empty: every type
    event_types            text[]      NOT NULL DEFAULT '{}',
    -- providers ('stripe', 'apple'); empty: both
    sources                text[]      NOT NULL DEFAULT '{}',
    environment            text        NOT NULL DEFAULT 'all' CHECK (environment IN ('production', 'sandbox', 'all')),
    -- receives Apple's notifications as Apple sent them, instead of entitlement events
    raw_apple              boolean     NOT NULL DEFAULT false,
    max_per_second         integer     CHECK (max_per_second IS NULL OR max_per_second > 0),
    -- 'operator' (worker endpoints add) or 'environment' (FORWARD_TARGETS, kept in step at each start)
    managed_by             text        NOT NULL DEFAULT 'operator' CHECK (managed_by IN ('operator', 'environment')),
    disabled_at            timestamptz,
    disabled_reason        text,
    -- when the current run of failed deliveries began; NULL after a success
    failing_since          timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX endpoints_environment_url ON endpoints (url) WHERE managed_by = 'environment';

-- sluice_endpoint_takes: now in sql/functions/, re-applied by every `worker migrate` (the
-- current body of a function is in one file; a migration changes only the schema).

-- Numbers the events; gaps are normal (numbers are shared by every entitlement).
CREATE SEQUENCE outgoing_event_sequence;

-- The stream of changes, in the order they were committed for each entitlement (`sequence`).
CREATE TABLE outgoing_events (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- 'msg_…' (128 random bits), the webhook-id: the same on every delivery and redelivery; not
    -- indexed, nothing looks an event up by it (each index costs every apply a write)
    message_id      text        NOT NULL,
    type            text        NOT NULL,
    -- the entitlement (or, for transaction events, the transaction's entitlement) the event is about
    entity_key      text        NOT NULL,
    -- deliveries of one ordering key to one endpoint leave in sequence order: the entitlement, or the ledger row
    ordering_key    text        NOT NULL,
    -- stripe | apple: whose state changed
    provider        text        NOT NULL,
    environment     text        NOT NULL,
    user_id         text,
    -- from outgoing_event_sequence, taken while the entitlement's (or transaction's) row is locked
    -- by the save that changed it: for one entitlement, later changes get larger numbers
    sequence        bigint      NOT NULL,
    -- the queue row that caused it (NULL when the clock did)
    cause_event_id  bigint,
    -- the JSON body every endpoint receives, byte for byte
    payload         bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outgoing_events_created ON outgoing_events (created_at);

-- The is_active the last outgoing event announced: the clock sweep announces the ones whose
-- period ran out with no ending event.
ALTER TABLE entitlements ADD COLUMN announced_active boolean NOT NULL DEFAULT false;
UPDATE entitlements SET announced_active = true
WHERE status IN ('active', 'trialing', 'cancelled', 'grace_period')
  AND COALESCE(CASE WHEN status = 'grace_period' THEN COALESCE(grace_period_expires_at, expires_at) ELSE expires_at END, 'infinity') > now();
CREATE INDEX entitlements_announced_active ON entitlements (expires_at) WHERE announced_active;

-- Deliveries of outgoing events name their endpoint and the order they leave in; Apple forwards
-- made before endpoints existed keep their `target` and the old uniqueness.
ALTER TABLE deliveries ALTER COLUMN event_id DROP NOT NULL;
ALTER TABLE deliveries ADD COLUMN endpoint_id bigint;
ALTER TABLE deliveries ADD COLUMN outgoing_event_id bigint;
ALTER TABLE deliveries ADD COLUMN ordering_key text;
ALTER TABLE deliveries ADD COLUMN sequence bigint;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_once;
CREATE UNIQUE INDEX deliveries_once_per_target ON deliveries (event_id, target) WHERE endpoint_id IS NULL;
CREATE UNIQUE INDEX deliveries_once_per_endpoint ON deliveries (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL;
-- Dequeue holds back a delivery while an earlier one of the same entitlement to the same endpoint waits.
CREATE INDEX deliveries_in_order ON deliveries (endpoint_id, ordering_key, sequence) WHERE state IN ('pending', 'running');


-- The worker numbers events (its table grants come from 0008's default privileges).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT USAGE ON SEQUENCE outgoing_event_sequence TO sluice_worker;
    END IF;
END $$;
