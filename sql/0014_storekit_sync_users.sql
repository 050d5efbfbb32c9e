-- SPDX-License-Identifier: Apache-2.0
-- The users each purchase was synced for (SYNC_MAX_USERS_PER_TRANSACTION, docs/operations.md,
-- "Security model"): a client key can sync one real signed transaction under any user_id, so
-- ingest admits a purchase's sync for at most so many distinct users and refuses the rest
-- (409 too_many_users) before storing anything. Users are kept as SHA-256 digests.
CREATE TABLE storekit_sync_users (
    original_transaction_id  text        NOT NULL,
    user_digest              bytea       NOT NULL,
    first_synced_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (original_transaction_id, user_digest)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT, INSERT ON storekit_sync_users TO sluice_ingest;
    END IF;
END $$;
