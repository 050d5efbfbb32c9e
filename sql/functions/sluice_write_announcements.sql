-- SPDX-License-Identifier: Apache-2.0
-- Everything applying one event sends out and records, in one call (sluice_write_applied): the
-- event's applied_events record, its outgoing events, one delivery per enabled endpoint whose
-- filters take each, and the raw notification's deliveries for raw_apple endpoints.
--
-- Why a function: PL/pgSQL keeps each statement's plan for the life of the connection. Sent as
-- one SQL statement with its five CTEs, the same work was planned again for every applied event:
-- 0.52 ms of planning against 0.21 ms of execution per event (pg_stat_statements with
-- track_planning, ApplyBenchmark mixed), the largest single cost PostgreSQL had in applying. A
-- client-side prepared statement would also keep the plan, but not behind PgBouncer in
-- transaction mode; a function's plans live in the server connection, so they work there too.
CREATE OR REPLACE FUNCTION sluice_write_announcements(
    p_record_event_id bigint, p_record_entity_key text, p_record_outcome text, p_record_detail text,
    p_message_ids text[], p_types text[], p_entity_keys text[], p_ordering_keys text[], p_providers text[],
    p_environments text[], p_user_ids text[], p_tails text[],
    p_cause_event_id bigint, p_occurred_at timestamptz,
    p_raw_event_id bigint, p_raw_environment text
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    announced bigint := 0;
    forwarded bigint := 0;
BEGIN
    IF p_record_event_id IS NOT NULL THEN
        INSERT INTO applied_events (event_id, entity_key, outcome, detail)
        VALUES (p_record_event_id, p_record_entity_key, p_record_outcome, p_record_detail)
        ON CONFLICT (event_id) DO NOTHING;
    END IF;

    IF cardinality(p_message_ids) > 0 THEN
        -- Numbered in the order given, while the caller holds the rows the events are about.
        WITH input AS (
            SELECT * FROM unnest(p_message_ids, p_types, p_entity_keys, p_ordering_keys, p_providers, p_environments,
                                 p_user_ids, p_tails)
                WITH ORDINALITY AS i(message_id, type, entity_key, ordering_key, provider, environment, user_id, tail, n)
        ),
        numbered AS (SELECT input.*, nextval('outgoing_event_sequence') AS sequence FROM input ORDER BY n),
        stored AS (
            INSERT INTO outgoing_events (message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence,
                cause_event_id, payload, created_at)
            SELECT message_id, type, entity_key, ordering_key, provider, environment, NULLIF(user_id, ''), sequence,
                p_cause_event_id, convert_to('{"sequence":' || sequence || ',' || tail, 'UTF8'), p_occurred_at
            FROM numbered
            RETURNING id, message_id, type, ordering_key, provider, environment, sequence, payload
        ),
        sent AS (
            INSERT INTO deliveries (event_id, outgoing_event_id, source, type, external_id, target, payload, endpoint_id,
                ordering_key, sequence)
            SELECT p_cause_event_id, stored.id, stored.provider, stored.type, stored.message_id, e.url, stored.payload, e.id,
                stored.ordering_key, stored.sequence
            FROM stored, endpoints e
            WHERE e.disabled_at IS NULL AND NOT e.raw_apple
              AND sluice_endpoint_takes(e, stored.type, stored.provider, stored.environment)
            RETURNING id
        )
        SELECT count(*) INTO announced FROM sent;
    END IF;

    IF p_raw_event_id IS NOT NULL THEN
        WITH sent AS (
            INSERT INTO deliveries (event_id, source, type, external_id, target, payload, endpoint_id)
            SELECT events.id, events.source, events.type, events.external_id, e.url, events.payload, e.id
            FROM events, endpoints e
            WHERE events.id = p_raw_event_id
              AND e.raw_apple AND e.disabled_at IS NULL
              AND (e.environment = 'all' OR e.environment = p_raw_environment)
            ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO NOTHING
            RETURNING id
        )
        SELECT count(*) INTO forwarded FROM sent;
    END IF;

    RETURN announced + forwarded;
END $$;

-- Least privilege: only the worker (and the owner) may call it.
REVOKE ALL ON FUNCTION sluice_write_announcements(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[], bigint, timestamptz, bigint, text) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_write_announcements(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[], bigint, timestamptz, bigint, text) TO sluice_worker;
    END IF;
END $$;
