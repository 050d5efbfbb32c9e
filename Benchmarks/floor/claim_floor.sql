-- SPDX-License-Identifier: Apache-2.0
-- apply_floor.sql without the state: the same claim and completion of :batch events in one
-- statement, nothing written but the events' own rows (scripts/bench-floor's no-op ceiling).
WITH claimed AS (
    SELECT id, payload FROM events WHERE state = 'pending' ORDER BY run_at LIMIT :batch FOR UPDATE SKIP LOCKED
),
completed AS (
    UPDATE events SET state = 'done', finished_at = now(), locked_by = NULL, locked_until = NULL, updated_at = now()
    FROM claimed WHERE events.id = claimed.id
)
SELECT count(*), sum(length(payload)) FROM claimed;
