-- SPDX-License-Identifier: Apache-2.0
-- Maintenance run by one worker at a time (docs/operations.md, "Maintenance"): each task (the
-- pruner) is run by the worker whose lease on it runs; a worker that dies leaves its lease to
-- run out, and another takes the task over.
CREATE TABLE maintenance_leases (
    task          text        PRIMARY KEY,
    leased_by     text        NOT NULL,
    leased_until  timestamptz NOT NULL,
    last_run_at   timestamptz,
    last_error    text
);
