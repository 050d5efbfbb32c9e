-- SPDX-License-Identifier: Apache-2.0
-- Proof that a queue row was stored by Sluice (EVENT_SIGNING_KEY; docs/operations.md, "Security
-- model"): an HMAC-SHA256 under a key the database never holds, written by ingest (and by the
-- worker for what it recovers), checked by the worker before it applies a row.
ALTER TABLE events ADD COLUMN proof bytea;

-- Rows up to this id were stored before the worker first ran with the key and carry no proof;
-- the worker accepts those only. Written once by the worker; ingest's role cannot touch it.
CREATE TABLE event_proof_cutover (
    id                 integer     PRIMARY KEY CHECK (id = 1),
    last_unproven_id   bigint      NOT NULL,
    recorded_at        timestamptz NOT NULL DEFAULT now()
);
