-- SPDX-License-Identifier: Apache-2.0
-- The queue mechanism shared by every queue table, and the raw events queue.
--
-- A queue row moves pending -> running -> done, or back to pending with a later run_at after a
-- failed attempt, or to dead after MAX_ATTEMPTS; operators may mark dead rows discarded.
-- A running row is owned by a lease (locked_by, locked_until), never by an open transaction.

CREATE TABLE events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- who sent it: stripe | apple | storekit; also the job kind that picks the handler
    source        text        NOT NULL CHECK (source IN ('stripe', 'apple', 'storekit')),
    -- the provider's idempotency key: Stripe event id, Apple notificationUUID, StoreKit transactionId
    external_id   text        NOT NULL,
    type          text        NOT NULL,
    subtype       text,
    environment   text,
    -- the provider's own time for the event: Stripe `created`, Apple `signedDate`
    event_time    timestamptz,
    -- the entity whose events must be applied in order (subscription, originalTransactionId, …)
    ordering_key  text,
    -- the request body byte for byte, as it was verified
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

    CONSTRAINT events_idempotency UNIQUE (source, external_id)
);

-- Dequeue reads only runnable rows, in run_at order.
CREATE INDEX events_runnable ON events (run_at) WHERE state = 'pending';
-- The rescuer looks only at running rows whose lease may have expired.
CREATE INDEX events_leased ON events (locked_until) WHERE state = 'running';
-- Operators list dead rows.
CREATE INDEX events_dead ON events (finished_at) WHERE state = 'dead';

-- Every failed attempt of every queue, with its error, so an operator sees the whole history.
CREATE TABLE queue_attempts (
    queue        text        NOT NULL,
    job_id       bigint      NOT NULL,
    attempt      integer     NOT NULL,
    worker       text,
    error        text        NOT NULL,
    duration_ms  double precision,
    finished_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, job_id, attempt)
);

-- A row here pauses dequeuing of that queue in every worker process.
CREATE TABLE queue_pauses (
    queue      text        PRIMARY KEY,
    paused_at  timestamptz NOT NULL DEFAULT now()
);
