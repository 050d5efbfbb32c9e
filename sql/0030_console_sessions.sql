-- SPDX-License-Identifier: Apache-2.0
-- The console's sessions, server-side (docs/operations.md, "Operator console"): the signed cookie
-- says which operator key began a session; this row says whether it is still live, for every
-- console replica. Signing out ends it; 30 minutes without a request end it; it never outlives
-- its 12 hours. The cookie's nonce is kept only as its SHA-256, so the table cannot be replayed.
CREATE TABLE IF NOT EXISTS console_sessions (
    nonce_digest  bytea       PRIMARY KEY,
    -- the position of the operator key in OPERATOR_KEYS, as the logs name it (never the key)
    operator_key  integer     NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    ended_at      timestamptz
);
