-- SPDX-License-Identifier: Apache-2.0
-- sluice_write_applied for many applied events in one call: a batch (WORKER_BATCH_SIZE) applied
-- without savepoints sends its events' records, outgoing events, deliveries and links once, after
-- the last event's state, instead of one call per event (WorkerPool+Batches, AppliedWritesBuffer).
--
-- p_calls is a JSON array with one object per sluice_write_applied call, in the order the events
-- were applied; each is made exactly as that call would have been, so the outgoing events are
-- numbered in the same order. The caller still holds every row and lock the events are about.
-- Returns each call's count of deliveries, in order.
CREATE FUNCTION sluice_write_applied_batch(p_calls jsonb) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    c jsonb;
    counts bigint[] := '{}';
BEGIN
    FOR c IN SELECT value FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS a(value, n) ORDER BY n LOOP
        counts := counts || sluice_write_applied(
            (c->>'record_event_id')::bigint, c->>'record_entity_key', c->>'record_outcome', c->>'record_detail',
            ARRAY(SELECT jsonb_array_elements_text(c->'message_ids')),
            ARRAY(SELECT jsonb_array_elements_text(c->'types')),
            ARRAY(SELECT jsonb_array_elements_text(c->'entity_keys')),
            ARRAY(SELECT jsonb_array_elements_text(c->'ordering_keys')),
            ARRAY(SELECT jsonb_array_elements_text(c->'providers')),
            ARRAY(SELECT jsonb_array_elements_text(c->'environments')),
            ARRAY(SELECT jsonb_array_elements_text(c->'user_ids')),
            ARRAY(SELECT jsonb_array_elements_text(c->'tails')),
            (c->>'cause_event_id')::bigint, timestamptz '2000-01-01 00:00:00+00' + (c->>'occurred_at_us')::bigint * interval '1 microsecond',
            (c->>'raw_event_id')::bigint, c->>'raw_environment', (c->>'links')::jsonb);
    END LOOP;
    RETURN counts;
END $$;

-- Least privilege: only the worker (and the owner) may call it.
REVOKE ALL ON FUNCTION sluice_write_applied_batch(jsonb) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_write_applied_batch(jsonb) TO sluice_worker;
    END IF;
END $$;
