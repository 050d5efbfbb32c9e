-- SPDX-License-Identifier: Apache-2.0
-- The deliveries queue: one row per applied Apple notification and forward target, created in the
-- transaction that applied the notification (an outbox), and sent by the worker's forwarder.
-- Same lifecycle columns as events, so the same queue mechanism drives it.

CREATE TABLE deliveries (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- the events row whose payload this forwards (no foreign key: done events may be pruned first)
    event_id      bigint      NOT NULL,
    -- the source of the forwarded event; also the job kind that picks the worker's handler
    source        text        NOT NULL,
    type          text        NOT NULL,
    -- the forwarded event's idempotency key (notificationUUID), sent as `webhook-id`
    external_id   text        NOT NULL,
    target        text        NOT NULL,
    -- the original request body byte for byte
    payload       bytea       NOT NULL,
    received_at   timestamptz NOT NULL DEFAULT now(),

    state         text        NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'running', 'done', 'dead', 'discarded')),
    attempts      integer     NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL DEFAULT now(),
    locked_by     text,
    locked_until  timestamptz,
    last_error    text,
    finished_at   timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),

    -- Applying an event twice (it cannot, but a replay of a dead one might) never forwards twice.
    CONSTRAINT deliveries_once UNIQUE (event_id, target)
);

CREATE INDEX deliveries_runnable ON deliveries (run_at) WHERE state = 'pending';
CREATE INDEX deliveries_leased ON deliveries (locked_until) WHERE state = 'running';
CREATE INDEX deliveries_dead ON deliveries (finished_at) WHERE state = 'dead';
CREATE INDEX deliveries_done ON deliveries (finished_at) WHERE state = 'done';

-- `worker prune` removes done rows oldest first.
CREATE INDEX events_done ON events (finished_at) WHERE state = 'done';

-- A replayed job starts again at attempt 1, so an attempt is no longer named by its number:
-- every attempt keeps its own row, and the history is read in the order attempts ended.
ALTER TABLE queue_attempts DROP CONSTRAINT queue_attempts_pkey;
ALTER TABLE queue_attempts ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
-- The HTTP status a forward target answered, when it answered.
ALTER TABLE queue_attempts ADD COLUMN http_status integer;
CREATE INDEX queue_attempts_job ON queue_attempts (queue, job_id, id);
