-- SPDX-License-Identifier: Apache-2.0
-- One person, one user (docs/getting-started.md, "One person on both stores").
--
-- Apple names a purchase's user by the appAccountToken (a UUID) the app set on it; Stripe by the
-- app's own id (metadata.user_id). The app's server registers which of its users a token is
-- (PUT /v1/iap/users/{user_id}/app-account-token): a user may have several tokens, a token
-- belongs to one user. From then on Apple state carrying the token is that user's: the worker
-- applies new events under the user, and the registration's own queue event moves what was
-- stored under the token before.
CREATE TABLE app_account_tokens (
    token       uuid        PRIMARY KEY,
    user_id     text        NOT NULL CHECK (length(user_id) BETWEEN 1 AND 255),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX app_account_tokens_user ON app_account_tokens (user_id);

-- The registration's queue event (source 'account') moves what was stored under the token.
ALTER TABLE events DROP CONSTRAINT events_source_check,
    ADD CONSTRAINT events_source_check CHECK (source IN ('stripe', 'apple', 'storekit', 'account'));

-- State stored under a token is found by the token, as text (the form the worker writes).
CREATE INDEX provider_links_user ON provider_links (user_id) WHERE user_id IS NOT NULL;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        -- Ingest registers tokens (and queues the registration's event) and reads them for the
        -- read API and the StoreKit sync's user check; it never changes or removes one.
        GRANT SELECT, INSERT ON app_account_tokens TO sluice_ingest;
    END IF;
END $$;
