-- SPDX-License-Identifier: Apache-2.0
-- What ingest's credential alone can no longer do (docs/operations.md, "Security model").
--
-- 1. Choose a queue row's id, state, attempts or schedule. Ingest may insert only the columns it
--    writes; `id` stays GENERATED ALWAYS, and `INSERT … OVERRIDING SYSTEM VALUE` needs the
--    privilege on `id` it no longer has. The worker's proof check no longer compares ids at all:
--    rows stored before the worker first ran with EVENT_SIGNING_KEY are given a proof once, at
--    start (`proofs_backfilled_at`), and every row must carry one from then on.
-- 2. Register an appAccountToken by writing its row. The worker follows a token only once it has
--    applied the registration's proven queue event, which writes `app_account_token_owners` (a
--    table ingest's role cannot write). Ingest's own readers (the read API, the StoreKit sync's
--    user check) take a registration row only when the worker applied it or it carries a valid
--    proof (an HMAC under EVENT_SIGNING_KEY, which the database never holds).
ALTER TABLE app_account_tokens ADD COLUMN IF NOT EXISTS proof bytea;
ALTER TABLE event_proof_cutover ADD COLUMN IF NOT EXISTS proofs_backfilled_at timestamptz,
    ADD COLUMN IF NOT EXISTS proofs_backfilled_through bigint NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS app_account_token_owners (
    token       uuid        PRIMARY KEY,
    user_id     text        NOT NULL CHECK (length(user_id) BETWEEN 1 AND 255),
    -- the registration's queue event that the worker applied
    event_id    bigint,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS app_account_token_owners_user ON app_account_token_owners (user_id);
-- Registrations stored before this migration were applied by then (or are in the queue, and are
-- applied again harmlessly): they are the worker's as of the upgrade.
INSERT INTO app_account_token_owners (token, user_id)
SELECT token, user_id FROM app_account_tokens ON CONFLICT (token) DO NOTHING;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        REVOKE INSERT ON events, app_account_tokens, storekit_sync_users FROM sluice_ingest;
        GRANT INSERT (source, external_id, type, subtype, environment, event_time, ordering_key, payload, origin, proof)
            ON events TO sluice_ingest;
        GRANT INSERT (token, user_id, proof) ON app_account_tokens TO sluice_ingest;
        GRANT INSERT (original_transaction_id, user_digest) ON storekit_sync_users TO sluice_ingest;
        GRANT SELECT ON app_account_token_owners TO sluice_ingest;
    END IF;
END $$;
