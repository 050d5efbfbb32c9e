-- SPDX-License-Identifier: Apache-2.0
-- Dedup keys outlive their events (docs/operations.md, "Retention").
--
-- `worker prune` deletes done events; their `(source, external_id)` keys move here, so a
-- notification Apple re-sends (its notification history reaches 180 days back) or an event
-- recovered again is still recognised as a duplicate: never stored, applied or forwarded twice.
-- Keys are deleted only after `worker prune --keep-keys` (default 400 days, at least 180 without --force).
CREATE TABLE event_keys (
    source       text        NOT NULL,
    external_id  text        NOT NULL,
    received_at  timestamptz NOT NULL,
    PRIMARY KEY (source, external_id)
);
CREATE INDEX event_keys_received ON event_keys (received_at);
