-- SPDX-License-Identifier: Apache-2.0
-- Every purchase moved from one user to another (TRANSFER_BEHAVIOR, docs/entitlements.md): who
-- it moved from and to, when, and what moved it (the sync of which transaction, or an
-- appAccountToken's registration). Written by the worker in the transaction that moves it; read
-- by operators (`worker transfers`). Ingest has no access.
CREATE TABLE entitlement_transfers (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entity_key      text        NOT NULL,
    from_user       text        NOT NULL,
    to_user         text        NOT NULL,
    -- sync | registration
    cause           text        NOT NULL CHECK (cause IN ('sync', 'registration')),
    transaction_id  text,
    -- the queue row applied
    event_id        bigint      NOT NULL,
    transferred_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entitlement_transfers_from ON entitlement_transfers (from_user, transferred_at DESC);
CREATE INDEX entitlement_transfers_to ON entitlement_transfers (to_user, transferred_at DESC);
