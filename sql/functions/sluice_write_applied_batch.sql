-- SPDX-License-Identifier: Apache-2.0
-- What applying events writes besides their state, for one event or many (HeldWrites, through
-- sluice_write_batch): each call is one event's links, applied_events record, outgoing events
-- with one delivery per enabled endpoint whose filters take each (sluice_endpoint_takes), and its
-- raw notification's deliveries for raw_apple endpoints. p_calls is a JSON array of calls in the
-- order the events were applied (OutgoingEventWriter makes each); it returns each call's count
-- of deliveries, in order.
--
-- Each table is written once for all the calls: one sluice_save_links over every call's links,
-- one INSERT of the records, one of the outgoing events with their deliveries, one of the raw
-- notifications' deliveries. Called per event in a loop, that work was the largest cost
-- PostgreSQL had in applying (8.2 ms of execution a call for ~13 events, against 0.26 ms for an
-- entitlement's upsert; pg_stat_statements, scripts/bench-statements, batch 16).
--
-- What many calls in one statement keep of the calls one by one, which WriteAppliedBatchTests
-- checks:
-- - the links are saved in the order of the calls, each call's in its own order;
-- - the outgoing events are numbered in the order of the calls, each call's in its order, while
--   the caller holds the rows they are about (a later change of one gets a larger number);
-- - each call's count of deliveries comes back, in order;
-- - `created_at` is the call's instant, to the microsecond; deliveries name the call's event.
CREATE OR REPLACE FUNCTION sluice_write_applied_batch(p_calls jsonb) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    part record;
    all_links jsonb;
    announced bigint[];
    forwarded bigint[];
BEGIN
    SELECT jsonb_agg(link.value ORDER BY c.n, link.n) INTO all_links
    FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS c(value, n),
         jsonb_array_elements(sluice_call_array(c.value->'links')) WITH ORDINALITY AS link(value, n);
    IF all_links IS NOT NULL THEN
        PERFORM sluice_save_links(all_links);
    END IF;

    INSERT INTO applied_events (event_id, entity_key, outcome, detail)
    SELECT (c->>'record_event_id')::bigint, c->>'record_entity_key', c->>'record_outcome', c->>'record_detail'
    FROM jsonb_array_elements(p_calls) AS a(c)
    WHERE c->>'record_event_id' IS NOT NULL
    ON CONFLICT (event_id) DO NOTHING;

    -- The balance changes of catalog products' currency grants (CurrencyGrantDecision.argument),
    -- in the order of the calls, each made at most once under its key and naming the event it
    -- came from (cause_event_id) for its balance.changed announcement. A grant comes as a row of
    -- sluice_deposit_balances already; each run of grants is one call of it (a grant of a period
    -- whose credits expire carries expires_at_us, read here as expires_at). A take-back or
    -- give-back, which ends a run, is one sluice_reverse_balance_change. So a grant is made
    -- before a take-back of it in the same batch, and a take-back before a later grant to the
    -- same user.
    FOR part IN
        WITH changes AS (
            SELECT CASE WHEN jsonb_typeof(c.value->'balance_changes') = 'string'
                        -- A worker of the release before, during a rolling update: its names, read as today's
                        -- (drop in the release after next, with sluice_call_array's string arm).
                        THEN x.value || jsonb_build_object('user_id', x.value->'user', 'adjustments', x.value->'amounts',
                                'idempotency_key', x.value->'key', 'cause_event_id', c.value->'record_event_id')
                        ELSE x.value END AS v,
                   c.n, x.i, count(*) FILTER (WHERE x.value->>'kind' <> 'grant') OVER (ORDER BY c.n, x.i) AS run
            FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS c(value, n),
                 jsonb_array_elements(sluice_call_array(c.value->'balance_changes')) WITH ORDINALITY AS x(value, i)
        )
        SELECT (array_agg(v) FILTER (WHERE v->>'kind' <> 'grant'))[1] AS reversal,
               jsonb_agg(CASE WHEN v ? 'expires_at_us'
                             THEN v || jsonb_build_object('expires_at', sluice_timestamp_us((v->>'expires_at_us')::bigint))
                             ELSE v END
                   ORDER BY n, i) FILTER (WHERE v->>'kind' = 'grant') AS grants
        FROM changes GROUP BY run ORDER BY run
    LOOP
        PERFORM CASE part.reversal->>'kind'
            WHEN 'take_back' THEN sluice_reverse_balance_change(
                part.reversal->>'of', (part.reversal->>'numerator')::bigint, (part.reversal->>'denominator')::bigint, 'refund',
                part.reversal->>'key', true, NULL, (part.reversal->>'cause_event_id')::bigint)
            WHEN 'give_back' THEN sluice_reverse_balance_change(
                part.reversal->>'of', 1, 1, 'refund_reversal', part.reversal->>'key', false, NULL, (part.reversal->>'cause_event_id')::bigint)
        END;
        IF part.grants IS NOT NULL THEN
            PERFORM sluice_deposit_balances(part.grants);
        END IF;
    END LOOP;

    -- Each call's events, flattened in the order of the calls; numbered in that order while the
    -- caller holds the rows the events are about.
    WITH calls AS (
        SELECT value AS c, n, jsonb_array_length(value->'message_ids') AS events
        FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS a(value, n)
    ),
    -- A call's events come as parallel arrays, read side by side in one pass (ROWS FROM zips
    -- them). Not `c->'tails'->>(i - 1)` per event: each `->` copies the whole array out of the
    -- call, so a call of n events copied its arrays n times. The balance announcer sends up to
    -- 200 events a call: about 8 ms a call that way, 0.7 ms in one pass (Benchmarks/HISTORY.md).
    input AS (
        SELECT calls.n AS call, m.i, m.message_id, m.type, m.entity_key, m.ordering_key, m.provider, m.environment,
               NULLIF(m.user_id, '') AS user_id, m.tail,
               (calls.c->>'cause_event_id')::bigint AS cause_event_id,
               sluice_timestamp_us((calls.c->>'occurred_at_us')::bigint) AS occurred_at
        FROM calls, ROWS FROM (
                jsonb_array_elements_text(calls.c->'message_ids'), jsonb_array_elements_text(calls.c->'types'),
                jsonb_array_elements_text(calls.c->'entity_keys'), jsonb_array_elements_text(calls.c->'ordering_keys'),
                jsonb_array_elements_text(calls.c->'providers'), jsonb_array_elements_text(calls.c->'environments'),
                jsonb_array_elements_text(calls.c->'user_ids'), jsonb_array_elements_text(calls.c->'tails')
            ) WITH ORDINALITY AS m(message_id, type, entity_key, ordering_key, provider, environment, user_id, tail, i)
        -- The events are the message ids: what another array holds beyond them is dropped (a
        -- null message id still fails the insert aloud, as it did read one by one).
        WHERE m.i <= calls.events
    ),
    numbered AS (SELECT input.*, nextval('outgoing_event_sequence') AS sequence FROM input ORDER BY call, i),
    stored AS (
        INSERT INTO outgoing_events (message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence,
            cause_event_id, payload, created_at)
        SELECT message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence,
            cause_event_id, convert_to('{"sequence":' || sequence || ',' || tail, 'UTF8'), occurred_at
        FROM numbered ORDER BY sequence
        RETURNING id, message_id, type, ordering_key, provider, environment, sequence, payload, cause_event_id
    ),
    sent AS (
        INSERT INTO deliveries (event_id, outgoing_event_id, source, type, external_id, target, payload, endpoint_id,
            ordering_key, sequence)
        SELECT stored.cause_event_id, stored.id, stored.provider, stored.type, stored.message_id, e.url, stored.payload, e.id,
            stored.ordering_key, stored.sequence
        FROM stored, endpoints e
        WHERE e.disabled_at IS NULL AND NOT e.raw_apple
          AND sluice_endpoint_takes(e, stored.type, stored.provider, stored.environment)
        ORDER BY stored.sequence, e.id
        RETURNING sequence
    ),
    per_call AS (
        SELECT numbered.call, count(*) AS deliveries FROM sent JOIN numbered USING (sequence) GROUP BY numbered.call
    )
    SELECT array_agg(COALESCE(per_call.deliveries, 0) ORDER BY calls.n) INTO announced
    FROM calls LEFT JOIN per_call ON per_call.call = calls.n;

    -- The raw notifications' deliveries, for raw_apple endpoints.
    WITH calls AS (
        SELECT value AS c, n FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS a(value, n)
    ),
    raw AS (
        SELECT n AS call, (c->>'raw_event_id')::bigint AS event_id, c->>'raw_environment' AS environment
        FROM calls WHERE c->>'raw_event_id' IS NOT NULL
    ),
    sent AS (
        INSERT INTO deliveries (event_id, source, type, external_id, target, payload, endpoint_id)
        SELECT events.id, events.source, events.type, events.external_id, e.url, events.payload, e.id
        FROM raw JOIN events ON events.id = raw.event_id, endpoints e
        WHERE e.raw_apple AND e.disabled_at IS NULL
          AND (e.environment = 'all' OR e.environment = raw.environment)
        ORDER BY raw.call, e.id
        ON CONFLICT (endpoint_id, external_id) WHERE endpoint_id IS NOT NULL DO NOTHING
        RETURNING event_id
    ),
    per_call AS (
        SELECT raw.call, count(*) AS deliveries FROM sent JOIN raw USING (event_id) GROUP BY raw.call
    )
    SELECT array_agg(COALESCE(per_call.deliveries, 0) ORDER BY calls.n) INTO forwarded
    FROM calls LEFT JOIN per_call ON per_call.call = calls.n;

    RETURN ARRAY(
        SELECT a + f FROM unnest(COALESCE(announced, '{}'), COALESCE(forwarded, '{}')) AS u(a, f));
END $$;

-- Least privilege: only the worker (and the owner) may call it.
CALL sluice_allow_execute('sluice_write_applied_batch(jsonb)', 'sluice_worker');
